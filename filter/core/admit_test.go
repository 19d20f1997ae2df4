package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// atOnceStore answers every Admit before it returns, as a fleet store does
// when its call cannot leave.
type atOnceStore struct{ sharedstore.Store }

func (atOnceStore) Admit(_ limit.Plan, done func(limit.Outcome)) {
	done(limit.Outcome{Result: limit.ResultAdmitted})
}

// resumeCounter counts the requests the filter resumes.
type resumeCounter struct {
	*guestHost
	resumed int
}

func (c *resumeCounter) ContinueStream(abi.StreamType) abi.Status {
	c.resumed++
	return abi.StatusOK
}

// An answer given within the store's Admit is returned to the exchange,
// which lets the request continue from the body callback itself; only an
// answer that comes after Admit returned resumes the paused request.
func TestOnlyAnAdmissionAnsweredLaterResumesTheRequest(t *testing.T) {
	for _, c := range []struct {
		name    string
		store   func(sharedstore.Store) sharedstore.Store
		action  abi.Action
		phase   exchange.Phase
		resumed int
	}{
		{"the shared-data store", func(s sharedstore.Store) sharedstore.Store { return s },
			abi.ActionContinue, exchange.PhaseForwarded, 0},
		{"another store answering within Admit", func(s sharedstore.Store) sharedstore.Store { return atOnceStore{s} },
			abi.ActionContinue, exchange.PhaseForwarded, 0},
		{"a store answering later", func(s sharedstore.Store) sharedstore.Store { return fleetStore{s} },
			abi.ActionPause, exchange.PhaseAdmitting, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGuestHost()
			h := &resumeCounter{guestHost: g}
			r := NewRoot(1, h)
			require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
			body := benchBody(1<<10, false)
			(&benchRig{h: g, root: r}).setHeaders(body)
			g.body = body
			s := r.NewHttpContext(2).(*Stream)
			require.Equal(t, abi.ActionContinue, s.OnHttpRequestHeaders(len(g.req), false))
			s.store = c.store(s.store)
			require.Equal(t, c.action, s.OnHttpRequestBody(len(body), true))
			require.Equal(t, c.phase, s.x.Phase())
			if c.phase == exchange.PhaseAdmitting {
				require.Zero(t, h.resumed, "nothing resumes a request still waiting")
				s.onAdmitted(limit.Outcome{Result: limit.ResultAdmitted})
				require.Equal(t, exchange.PhaseForwarded, s.x.Phase())
			}
			require.Equal(t, c.resumed, h.resumed)
		})
	}
}
