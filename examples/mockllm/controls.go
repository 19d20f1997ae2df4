package mockllm

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// controls are the x-mock-* request headers that steer one answer.
type controls struct {
	output     int64
	hasOutput  bool
	cached     int64
	cacheWrite int64
	perChunk   int64
	delay      time.Duration
	abortAfter int64 // 0: never
	status     int
}

func parseControls(h http.Header) (controls, error) {
	c := controls{perChunk: 1}
	var err error
	num := func(name string, dst *int64) {
		v := h.Get(name)
		if v == "" || err != nil {
			return
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 {
			err = errors.New(name + ": want a non-negative integer, got " + strconv.Quote(v))
			return
		}
		*dst = n
	}
	if h.Get("x-mock-output-tokens") != "" {
		c.hasOutput = true
		num("x-mock-output-tokens", &c.output)
	}
	num("x-mock-cached-tokens", &c.cached)
	num("x-mock-cache-write-tokens", &c.cacheWrite)
	num("x-mock-tokens-per-chunk", &c.perChunk)
	var delayMS, status int64
	num("x-mock-chunk-delay-ms", &delayMS)
	num("x-mock-abort-after", &c.abortAfter)
	num("x-mock-status", &status)
	if err != nil {
		return controls{}, err
	}
	if c.perChunk == 0 {
		c.perChunk = 1
	}
	if status != 0 && (status < 100 || status > 599) {
		return controls{}, errors.New("x-mock-status: want an HTTP status, got " + strconv.FormatInt(status, 10))
	}
	c.status = int(status)
	c.delay = time.Duration(delayMS) * time.Millisecond
	return c, nil
}
