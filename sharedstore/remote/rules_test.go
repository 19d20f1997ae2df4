package remote

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// cannedCaller answers every admission with one fixed body, recording what
// was sent: the wire form of the rules, apart from the service.
type cannedCaller struct {
	status int
	answer string
	bodies [][]byte
}

func (c *cannedCaller) Call(_ [][2]string, body []byte, _ uint32, cb func(int, []byte, error)) error {
	c.bodies = append(c.bodies, append([]byte(nil), body...))
	cb(c.status, []byte(c.answer), nil)
	return nil
}

func cannedAdmit(t *testing.T, answer string, p limit.Plan) (limit.Outcome, *cannedCaller) {
	t.Helper()
	c := &cannedCaller{status: 200, answer: answer}
	s := New(c, Config{Token: token, Authority: "sharedstore", NewHoldID: func() string { return "0123456789abcdef0123456789abcdef" }},
		func() int64 { return 1e18 })
	var got *limit.Outcome
	s.Admit(p, func(o limit.Outcome) { got = &o })
	require.NotNil(t, got)
	return *got, c
}

func TestAnAdmissionCarriesItsOverageRuleAndTheHoldRecordsIt(t *testing.T) {
	cases := []struct {
		name    string
		overage limit.Overage
		wire    string
	}{
		{"debt, the default, is the member's absence", limit.OverageDebt, ""},
		{"skip is sent as skip", limit.OverageSkip, wire.OverageSkip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan("o", 300, 1000)
			p.Overage = c.overage
			o, caller := cannedAdmit(t, `{"admitted":true,"hold":"0123456789abcdef0123456789abcdef"}`, p)
			require.NoError(t, o.Err)
			require.True(t, o.Admitted())
			require.Equal(t, c.overage, o.Hold.Overage, "the hold settles by the rule it was admitted under")

			require.Len(t, caller.bodies, 1)
			var req wire.AdmitRequest
			require.NoError(t, json.Unmarshal(caller.bodies[0], &req), string(caller.bodies[0]))
			require.Equal(t, c.wire, req.Overage)
			require.Equal(t, "0123456789abcdef0123456789abcdef", req.HoldID)
			require.Len(t, req.Tokens, 1, "the plan is still all there")
			require.Len(t, req.Requests, 1)
			require.NoError(t, req.Validate())
		})
	}
}

func TestARequestLargerThanTheBucketSaysSo(t *testing.T) {
	cases := []struct {
		name    string
		answer  string
		exceeds bool
	}{
		{"the service says the request exceeds the bucket",
			`{"admitted":false,"refusal":{"kind":3,"dimension":"api_key","budget":"minute","retry_after":3000,"exceeds_capacity":true}}`, true},
		{"a refusal that waiting cures",
			`{"admitted":false,"refusal":{"kind":3,"dimension":"api_key","budget":"minute","retry_after":30}}`, false},
		{"an explicit false",
			`{"admitted":false,"refusal":{"kind":3,"dimension":"api_key","budget":"minute","retry_after":30,"exceeds_capacity":false}}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _ := cannedAdmit(t, c.answer, plan("x", 3000, 1000))
			require.NoError(t, o.Err)
			require.False(t, o.Admitted())
			require.NotNil(t, o.Refusal)
			require.Equal(t, c.exceeds, o.Refusal.ExceedsCapacity)
		})
	}
}
