// Command mockllm serves the deterministic mock LLM backend (see package mockllm) on a local port,
// for running the gateway or Envoy against something that answers like OpenAI and Anthropic.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8000", "address to serve on")
	outTokens := flag.Int64("default-output-tokens", 16, "answer length when the request does not set x-mock-output-tokens")
	flag.Parse()

	srv := &http.Server{
		Addr:              *listen,
		Handler:           mockllm.New(mockllm.Options{DefaultOutputTokens: *outTokens}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("mockllm listening on %s", *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("mockllm: %v", err)
	}
}
