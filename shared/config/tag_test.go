package config

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The decoder reads json tags without reflect's unquoting; on every field of
// every type the config is made of it must read what Tag.Get reads.
func TestJSONTagReadsWhatTagGetReadsOnEveryConfigField(t *testing.T) {
	t.Parallel()
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			require.Equal(t, f.Tag.Get("json"), jsonTag(f.Tag), "%s.%s", typ.Name(), f.Name)
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	require.Greater(t, len(seen), 10, "the walk reached the config's types")
	for _, tag := range []reflect.StructTag{`desc:"a json:\"x\"" json:"y"`, `json:"z,omitempty"`, `yaml:"a"`, ``} {
		require.Equal(t, tag.Get("json"), jsonTag(tag), "%s", tag)
	}
}
