package wire

import (
	"testing"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// BenchmarkDecodeAdmitRequest decodes the peers benchmark's plan (a
// request-count op and six token ops of minute and day), as the filter
// writes it, once per admission the service handles.
func BenchmarkDecodeAdmitRequest(b *testing.B) {
	p := limit.Plan{Requests: []limit.Op{{Key: "tb|r|api_key|v1|caller", Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Private: true, Amount: 1,
		Limits: []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 1 << 40, RefillPerSec: 1 << 30}}}}}
	for _, d := range []limit.Dimension{limit.DimGlobal, limit.DimClient, limit.DimAPIKey, limit.DimUser, limit.DimTeam, limit.DimModel} {
		p.Tokens = append(p.Tokens, limit.Op{Key: "tb|t|" + d.String() + "|v1|someone", Kind: limit.KindTokens, Dimension: d, Amount: 100, Private: d == limit.DimAPIKey,
			Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 1 << 40, RefillPerSec: 1 << 34}, {Budget: limit.PeriodDay, Capacity: 1 << 45, RefillPerSec: 1 << 30}}})
	}
	body := AppendAdmitHold(nil, p, "0123456789abcdef0123456789abcdef")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeAdmitRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}
