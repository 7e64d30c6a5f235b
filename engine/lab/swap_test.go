package lab

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// TestLabFileSwappedForFIFO: a file of a lab (one file() reads, one of a
// program's source, one a diagnostic quotes) was checked by name and then
// opened, so one swapped for a FIFO in between hung the load for good. It
// is now opened once, non-blocking, and checked on the open file: whatever
// the swap, each read ends with the file's text or "not a regular file"
// (issue 24, round 3 lows, item 3). A swapper renames a regular file and a
// FIFO over the name in turn while the lab is read again and again.
func TestLabFileSwappedForFIFO(t *testing.T) {
	const prog = `lab "t" {}
host "a" { address = "192.0.2.1" }
program "p" { source = "src" }
workload "w" {
  tool    = "program"
  program = program.p
  host    = host.a
  command = ["./x"]
}
`
	tests := []struct {
		name string
		file string // the name swapped, under the lab's folder
		read func(dir string) string
		ok   []string // what a read may say: the text, or a refusal
	}{
		{"file()", "data.txt", func(dir string) string {
			v, err := fileFunc(dir).Call([]cty.Value{cty.StringVal("data.txt")})
			if err != nil {
				return err.Error()
			}
			return v.AsString()
		}, []string{"text", "not a regular file"}},
		{"program source", "src/x", func(dir string) string {
			_, diags := LoadSource(filepath.Join(dir, "lab.hcl"), []byte(prog), dir, LoadOptions{})
			if diags.HasErrors() {
				return diags.Error()
			}
			return "text"
		}, []string{"text", "not a regular file"}},
		{"a diagnostic's file", "vars.rlabvars", func(dir string) string {
			p := filepath.Join(dir, "vars.rlabvars")
			d := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "x", Subject: &hcl.Range{Filename: p}}}
			f := SourceFiles(nil, d)[p]
			if f == nil {
				return "not a regular file"
			}
			return string(f.Bytes)
		}, []string{"text", "not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
			name := filepath.Join(dir, tt.file)
			reg, fifoName := filepath.Join(dir, ".reg"), filepath.Join(dir, ".fifo")
			must(t, os.WriteFile(name, []byte("text"), 0o644))
			stop := make(chan struct{})
			var once sync.Once
			halt := func() { once.Do(func() { close(stop) }) }
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the swapper: a regular file, then a FIFO, in turn
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if i%2 == 0 {
						os.WriteFile(reg, []byte("text"), 0o644)
						os.Rename(reg, name)
					} else {
						syscall.Mkfifo(fifoName, 0o644)
						os.Rename(fifoName, name)
					}
				}
			}()
			var hung bool
			defer func() {
				halt()
				if !hung {
					wg.Wait()
				}
			}()
			done := make(chan string, 1)
			go func() {
				deadline := time.Now().Add(3 * time.Second)
				for time.Now().Before(deadline) {
					got := tt.read(dir)
					fine := false
					for _, ok := range tt.ok {
						fine = fine || strings.Contains(got, ok) || got == ""
					}
					if !fine {
						done <- "unexpected: " + got
						return
					}
				}
				done <- ""
			}()
			select {
			case got := <-done:
				if got != "" {
					t.Error(got)
				}
			case <-time.After(15 * time.Second):
				// The reader stays blocked on a FIFO no name leads to.
				hung = true
				t.Fatal("reading a lab file swapped for a FIFO hung")
			}
		})
	}
}
