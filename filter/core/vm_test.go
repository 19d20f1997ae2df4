package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// callingHost numbers its callouts from 1, as each of Envoy's worker VMs
// numbers its own: two VMs hand out the same tokens.
type callingHost struct {
	*guestHost
	next uint32
}

func (c *callingHost) HTTPCall(string, [][2]string, []byte, uint32) (uint32, abi.Status) {
	c.next++
	return c.next, abi.StatusOK
}

func TestTwoVMsInOneProcessKeepTheirOwnCallouts(t *testing.T) {
	t.Parallel()
	var got []string
	call := func(v *VM, name string) *Root {
		r := v.NewPluginContext(1).(*Root)
		c := &caller{host: r.host, vm: r.vm, cluster: "sharedstore"}
		require.NoError(t, c.Call(nil, nil, 100, func(status int, body []byte, err error) {
			require.Error(t, err)
			got = append(got, name)
		}))
		return r
	}
	a := NewVM(&callingHost{guestHost: newGuestHost()})
	ra := call(a, "a")
	b := NewVM(&callingHost{guestHost: newGuestHost()})
	rb := call(b, "b")
	require.Len(t, a.calls, 1, "making a second VM left the first one's callouts alone")

	ra.OnHTTPCallResponse(1, 0, 0, 0)
	require.Equal(t, []string{"a"}, got, "VM a's answer reached only VM a's call")
	rb.OnHTTPCallResponse(1, 0, 0, 0)
	require.Equal(t, []string{"a", "b"}, got, "VM b's call with the same token was still waiting")
	ra.OnHTTPCallResponse(1, 0, 0, 0)
	require.Equal(t, []string{"a", "b"}, got, "an answer is delivered once")
}

// TestTheCoreKeepsNoStateInThePackage holds what makes two VMs in one
// process independent: every package-level variable of the core (outside
// its tests) is the blank identifier of a compile-time check, so all state
// lives on a VM, a Root or a Stream.
func TestTheCoreKeepsNoStateInThePackage(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var named []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, id := range s.(*ast.ValueSpec).Names {
					if id.Name != "_" {
						named = append(named, fset.Position(id.Pos()).String()+": "+id.Name)
					}
				}
			}
		}
	}
	require.NotEmpty(t, files)
	require.Empty(t, named, "package-level variables of filter/core")
}
