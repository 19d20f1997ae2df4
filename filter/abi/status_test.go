package abi_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func TestEveryStatusIsTheSDKsErrorAndBack(t *testing.T) {
	cases := []struct {
		st  abi.Status
		sdk error // the SDK's value, nil where it has none
	}{
		{abi.StatusOK, nil},
		{abi.StatusNotFound, types.ErrorStatusNotFound},
		{abi.StatusBadArgument, types.ErrorStatusBadArgument},
		{abi.StatusSerializationFailure, nil},
		{abi.StatusParseFailure, nil},
		{abi.StatusInvalidMemoryAccess, nil},
		{abi.StatusEmpty, types.ErrorStatusEmpty},
		{abi.StatusCasMismatch, types.ErrorStatusCasMismatch},
		{abi.StatusInternalFailure, types.ErrorInternalFailure},
		{abi.StatusBrokenConnection, nil},
		{abi.StatusUnimplemented, types.ErrorUnimplemented},
	}
	for _, c := range cases {
		t.Run(c.st.String(), func(t *testing.T) {
			err := c.st.Err()
			if c.st == abi.StatusOK {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				require.Contains(t, err.Error(), c.st.String())
			}
			if c.sdk != nil {
				require.ErrorIs(t, err, c.sdk, "errors.Is against the SDK's value")
				require.Equal(t, c.st, abi.StatusOf(c.sdk), "the SDK's own value maps back")
			}
			require.Equal(t, c.st, abi.StatusOf(err), "round trip")
		})
	}
}

func TestAnErrorTheSDKNamesByCodeOrNotAtAllIsReadBack(t *testing.T) {
	require.Equal(t, abi.StatusSerializationFailure, abi.StatusOf(errors.New("unknown status code: 3")),
		"the SDK spells statuses it has no value for by number")
	require.Equal(t, abi.StatusBadArgument, abi.StatusOf(errors.New("data must not be empty")),
		"an argument the SDK refuses before any host call")
	require.Equal(t, abi.StatusBadArgument, abi.StatusOf(errors.New("unknown status code: x")))
}

// FuzzStatusOf: any error text reads as some status without a panic, and
// the SDK's spelling of a status by number reads back as that status.
func FuzzStatusOf(f *testing.F) {
	f.Add("unknown status code: 3", uint32(3))
	f.Add("error status returned by host: not found", uint32(1))
	f.Add("", uint32(0))
	f.Fuzz(func(t *testing.T, text string, code uint32) {
		_ = abi.StatusOf(errors.New(text))
		require.Equal(t, abi.Status(code), abi.StatusOf(errors.New("unknown status code: "+strconv.FormatUint(uint64(code), 10))))
	})
}
