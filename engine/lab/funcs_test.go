package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// TestFileConfined: file() and fileexists() read only files under the lab's
// folder, symlinks resolved; anything else is an error at the call's range
// that says why and how to fix it (the diagnostic with its range and hint:
// TestDiagnosticDetails and the corpus file file_outside_lab.hcl).
func TestFileConfined(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lab")
	outside := filepath.Join(base, "secret.txt")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(outside, []byte("SECRET"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "data.txt"), []byte("in lab"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "more.txt"), []byte("in sub"), 0o644))
	must(t, os.Symlink("data.txt", filepath.Join(dir, "link-in.txt")))
	must(t, os.Symlink(outside, filepath.Join(dir, "link-out.txt")))
	must(t, os.Symlink(base, filepath.Join(dir, "dir-out")))
	tests := []struct {
		path   string
		want   string // the value read; "" when refused
		err    string // part of the diagnostic's detail
		exists bool
	}{
		{path: "data.txt", want: "in lab", exists: true},
		{path: "sub/more.txt", want: "in sub", exists: true},
		{path: "sub/../data.txt", want: "in lab", exists: true},
		{path: filepath.Join(dir, "data.txt"), want: "in lab", exists: true},
		{path: "link-in.txt", want: "in lab", exists: true},
		{path: "../secret.txt", err: "outside the lab's folder"},
		{path: "../../../../../../../../etc/passwd", err: "outside the lab's folder"},
		{path: "sub/../../secret.txt", err: "outside the lab's folder"},
		{path: outside, err: "outside the lab's folder"},
		{path: "/etc/passwd", err: "outside the lab's folder"},
		{path: "link-out.txt", err: "outside the lab's folder"},
		{path: "dir-out/secret.txt", err: "outside the lab's folder"},
		{path: "sub", err: "not a regular file"},
		{path: "missing.txt", err: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			v, err := fileFunc(dir).Call([]cty.Value{cty.StringVal(tt.path)})
			if tt.err == "" {
				if err != nil || v.AsString() != tt.want {
					t.Errorf("file(%q) = %#v, %v; want %q", tt.path, v, err, tt.want)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("file(%q) = %#v, %v; want an error with %q", tt.path, v, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("the error shows the file: %v", err)
			}
			e, err := fileExistsFunc(dir).Call([]cty.Value{cty.StringVal(tt.path)})
			if err != nil || e.True() != tt.exists {
				t.Errorf("fileexists(%q) = %#v, %v; want %v", tt.path, e, err, tt.exists)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
