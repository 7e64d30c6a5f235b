// Package templates holds the files rlab writes for users: the starter labs
// of `rlab init` (init/<name>/), embedded so one rlab binary carries them.
// The quickstart and class labs are copies of labs/ (go:embed cannot reach
// outside this folder); the tests fail when a copy drifts, and
// `go test ./templates -update` copies labs/ over them. It must not import
// anything of rlab (internal/archtest checks it).
package templates

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed init
var initFS embed.FS

// DefaultInit is the template `rlab init` uses without --template.
const DefaultInit = "quickstart"

// InitNames lists the `rlab init` templates.
func InitNames() []string {
	ents, _ := fs.ReadDir(initFS, "init")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Init returns the files of one `rlab init` template, or ok=false.
func Init(name string) (fs.FS, bool) {
	for _, n := range InitNames() {
		if n == name {
			sub, err := fs.Sub(initFS, "init/"+name)
			return sub, err == nil
		}
	}
	return nil, false
}
