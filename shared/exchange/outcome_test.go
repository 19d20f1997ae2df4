package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// An outcome's text is the metric label and the access log's value, which
// dashboards and log queries match: it never changes.
func TestAnOutcomeIsWrittenAsItsMetricLabel(t *testing.T) {
	require.Equal(t, map[Outcome]string{OutcomeNone: "", OutcomeAdmitted: "admitted", OutcomeExempt: "exempt",
		OutcomeRefused: "refused", OutcomeInvalid: "invalid", OutcomeUnauthorized: "unauthorized",
		OutcomeUnavailable: "unavailable", OutcomeUnavailable + 1: ""},
		map[Outcome]string{OutcomeNone: OutcomeNone.String(), OutcomeAdmitted: OutcomeAdmitted.String(),
			OutcomeExempt: OutcomeExempt.String(), OutcomeRefused: OutcomeRefused.String(),
			OutcomeInvalid: OutcomeInvalid.String(), OutcomeUnauthorized: OutcomeUnauthorized.String(),
			OutcomeUnavailable: OutcomeUnavailable.String(), OutcomeUnavailable + 1: (OutcomeUnavailable + 1).String()})
}

// A store that answers within Admit returns its answer, and the exchange
// acts on it only once Admit has returned: nothing of the answer is done
// while the store runs, the request is not paused, so nothing resumes it,
// and a shadow-mode retry is answered the same way.
func TestAStoreThatAnswersAtOnceIsHeardAfterAdmitReturns(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     string
		answers []limit.Outcome // one per Admit, the plan's hold added to an admission
		want    []string
	}{
		{"admitted", keyBudget, []limit.Outcome{{Result: limit.ResultAdmitted}},
			[]string{"admit tokens=108", "count_request admitted", "count_tokens reserved api_key 108"}},
		{"refused", keyBudget, []limit.Outcome{{Refusal: &limit.Refusal{Kind: limit.KindTokens,
			Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Private: true}}},
			[]string{"admit tokens=108", "count_request refused", "count_refusal token_budget", "local_reply 429 token_budget_exceeded"}},
		{"a shadow refusal, then the rest of the plan admitted",
			`{"rate_limiting":{"mode":"shadow","limits":{"global":{"tokens_per_minute":1000},"per_api_key":{"tokens_per_minute":1000}}}}`,
			[]limit.Outcome{{Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute}},
				{Result: limit.ResultAdmitted}},
			[]string{"admit tokens=108", "count_shadow_refusal token_budget global", "admit tokens=108 retry",
				"count_request admitted", "count_tokens reserved api_key 108"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			answers := c.answers
			r.x.recorded().store = func(p *limit.Plan) *limit.Outcome {
				require.Equal(t, Admit, r.x.Pending()[len(r.x.Pending())-1].Kind, "nothing is done while the store runs")
				o := answers[0]
				answers = answers[1:]
				if o.Admitted() {
					o.Hold = limit.Hold{Backend: limit.BackendLocal, Entries: p.HoldEntries(), Overage: p.Overage}
				}
				return &o
			}
			require.Equal(t, AfterAdmission, r.send(chat(hiBody)))
			require.Equal(t, c.want, r.drain(Admit, CountRequest, CountTokens, CountRefusal, CountShadowRefusal, LocalReply, ResumeRequest))
			require.Empty(t, answers, "every Admit was answered")
			if c.want[len(c.want)-1] == "count_tokens reserved api_key 108" {
				require.Equal(t, PhaseForwarded, r.x.Phase())
				require.Equal(t, Continue, r.x.Admission())
			} else {
				require.Equal(t, PhaseReplied, r.x.Phase())
				require.Equal(t, Pause, r.x.Admission())
			}
		})
	}
}
