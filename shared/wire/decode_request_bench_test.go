package wire

import (
	"testing"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// peersAdmitBody is the peers benchmark's plan (a request-count op and six
// token ops of minute and day) as the filter writes it; withSpend adds a
// spend part of three limits and a reservation.
func peersAdmitBody(withSpend bool) []byte {
	p := limit.Plan{Requests: []limit.Op{{Key: "tb|r|api_key|v1|caller", Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Private: true, Amount: 1,
		Limits: []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 1 << 40, RefillPerSec: 1 << 30}}}}}
	for _, d := range []limit.Dimension{limit.DimGlobal, limit.DimClient, limit.DimAPIKey, limit.DimUser, limit.DimTeam, limit.DimModel} {
		p.Tokens = append(p.Tokens, limit.Op{Key: "tb|t|" + d.String() + "|v1|someone", Kind: limit.KindTokens, Dimension: d, Amount: 100, Private: d == limit.DimAPIKey,
			Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 1 << 40, RefillPerSec: 1 << 34}, {Budget: limit.PeriodDay, Capacity: 1 << 45, RefillPerSec: 1 << 30}}})
	}
	body := AppendAdmitHold(nil, p, "0123456789abcdef0123456789abcdef")
	if withSpend {
		a := &SpendAdmit{Team: "team-a", APIKey: "3f2a9c0d", User: "josé", Start: 1764880000123456789, Day: 20251204, Month: 202512,
			Limits:  []SpendLimit{{Slot: "team_month", LimitNanoUSD: 500e9}, {Slot: "api_key_day", LimitNanoUSD: 20e9}, {Slot: "user_day", LimitNanoUSD: 5e9}},
			Reserve: 41_250_000}
		body = append(appendSpendAdmit(append(body[:len(body)-1], `,"spend":`...), a), '}')
	}
	return body
}

// BenchmarkDecodeAdmitRequest decodes an admission as the filter writes it,
// once per admission the service handles: DecodeAdmitRequest (which reads
// it by its shape) and its reference alone, the figure that says whether
// the shape twin pays.
func BenchmarkDecodeAdmitRequest(b *testing.B) {
	for _, c := range []struct {
		name   string
		spend  bool
		decode func([]byte) (AdmitRequest, error)
	}{{"plan", false, DecodeAdmitRequest}, {"plan+spend", true, DecodeAdmitRequest},
		{"reference/plan", false, decodeAdmitRequest}, {"reference/plan+spend", true, decodeAdmitRequest}} {
		body := peersAdmitBody(c.spend)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
