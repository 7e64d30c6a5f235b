// Package schematest checks a results.json document against the JSON
// Schema the repository publishes for it (docs/results.schema.json), for
// tests of every package that writes or prints one. Only tests import it,
// so the validator never reaches the rlab binary; it imports no rlab
// package.
package schematest

import (
	"bytes"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Path is docs/results.schema.json in this source tree.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "results.schema.json")
}

var (
	once   sync.Once
	schema *jsonschema.Schema
	errC   error
)

// Compile compiles the schema once, asserting formats (date-time).
func Compile() (*jsonschema.Schema, error) {
	once.Do(func() {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		schema, errC = c.Compile(Path())
	})
	return schema, errC
}

// Validate fails t when b is not a results.json the schema accepts, naming
// what it rejects.
func Validate(t testing.TB, name string, b []byte) {
	t.Helper()
	if err := Check(b); err != nil {
		t.Errorf("%s does not validate against %s:\n%v", name, Path(), err)
	}
}

// Check says why b is not a results.json the schema accepts.
func Check(b []byte) error {
	s, err := Compile()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(doc)
}
