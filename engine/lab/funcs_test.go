package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
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

// TestLabFilesConfined: the lab's own files stay in its folder as file()'s
// do (found in attack round 11, high: a course repository's labs/x.hcl, or
// one *.hcl of a lab folder, was a symlink to any file of the reader's, and
// the parse error validate, plan and graph print showed its lines: the
// token of ~/.git-credentials, or /proc/self/environ's first variable). A
// symlink that stays in the folder is still read, and so is a pipe named
// directly.
func TestLabFilesConfined(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lab")
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	secret := filepath.Join(base, "git-credentials")
	must(t, os.WriteFile(secret, []byte("https://alice:ghp_CANARY123@example.com\n"), 0o600))
	main := "lab \"l\" {}\nhost \"a\" {\n  address = \"10.0.0.1\"\n}\nworkload \"w\" {\n  tool = \"exec\"\n  host = host.a\n  command = [\"true\"]\n}\n"
	must(t, os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(main), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "more.txt"), []byte("variable \"x\" {\n  default = 1\n}\n"), 0o644))
	must(t, os.Symlink(secret, filepath.Join(dir, "evil.hcl")))
	inside := filepath.Join(base, "inside")
	must(t, os.MkdirAll(inside, 0o755))
	must(t, os.WriteFile(filepath.Join(inside, "main.hcl"), []byte(main), 0o644))
	must(t, os.Symlink("sub/more.txt", filepath.Join(inside, "more.hcl")))
	must(t, os.MkdirAll(filepath.Join(inside, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(inside, "sub", "more.txt"), []byte("variable \"x\" {\n  default = 1\n}\n"), 0o644))
	for _, tc := range []struct {
		name  string
		paths []string
		ok    bool
	}{
		{"a folder with a symlink out", []string{dir}, false},
		{"the symlink named directly", []string{filepath.Join(dir, "evil.hcl")}, false},
		{"a folder with a symlink inside", []string{inside}, true},
		{"a symlink inside named directly", []string{filepath.Join(inside, "more.hcl"), filepath.Join(inside, "main.hcl")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, diags := Load(tc.paths, LoadOptions{})
			var text strings.Builder
			wr := hcl.NewDiagnosticTextWriter(&text, SourceFiles(l, diags), 100, false)
			wr.WriteDiagnostics(diags)
			for _, d := range diags {
				text.WriteString(d.Summary + " " + d.Detail + "\n")
			}
			if strings.Contains(text.String(), "CANARY") {
				t.Fatalf("the file outside the lab's folder was shown:\n%s", text.String())
			}
			if l != nil {
				for n, b := range l.Files {
					if strings.Contains(string(b), "CANARY") {
						t.Fatalf("the file outside the lab's folder was read as %s", n)
					}
				}
			}
			if got := !diags.HasErrors(); got != tc.ok {
				t.Fatalf("loaded without errors: %v, want %v:\n%s", got, tc.ok, text.String())
			}
			if !tc.ok && !strings.Contains(text.String(), "symlink out of the lab's folder") {
				t.Errorf("the error does not say why:\n%s", text.String())
			}
		})
	}
}

// TestSplitConfined: Split reads a folder's *.hcl files within the folder,
// as Load does (SECURITY 174): a symlink out of it, to a file outside
// holding one lab block, made a folder of one lab two (found in attack
// round 12, low: Split read any file the symlink named, and whether it
// parsed with one lab block changed what validate said). A symlink that
// stays inside still counts.
func TestSplitConfined(t *testing.T) {
	base := t.TempDir()
	one := "lab \"l\" {}\n"
	outside := filepath.Join(base, "outside.hcl")
	must(t, os.WriteFile(outside, []byte(one), 0o600))
	out := filepath.Join(base, "out")
	in := filepath.Join(base, "in")
	for _, d := range []string{out, in, filepath.Join(in, "sub")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(out, "main.hcl"), []byte(one), 0o644))
	must(t, os.Symlink(outside, filepath.Join(out, "evil.hcl")))
	must(t, os.WriteFile(filepath.Join(in, "main.hcl"), []byte(one), 0o644))
	must(t, os.WriteFile(filepath.Join(in, "sub", "other.txt"), []byte(one), 0o644))
	must(t, os.Symlink("sub/other.txt", filepath.Join(in, "other.hcl")))
	for _, tc := range []struct {
		dir  string
		labs int
	}{
		{out, 1}, // the folder as one lab: Load refuses the symlink, naming it
		{in, 2},
	} {
		labs, diags := Split(tc.dir)
		if diags.HasErrors() || len(labs) != tc.labs {
			t.Errorf("Split(%s) = %q, %v; want %d labs", filepath.Base(tc.dir), labs, diags, tc.labs)
		}
	}
}

// TestSourceFilesConfined: the files a failed Load's diagnostics name are
// read again within their folder too: one swapped for a symlink out of it
// after Load read it (or a diagnostic naming such a symlink) showed the
// outside file's lines (found in attack round 12 with Split, low).
func TestSourceFilesConfined(t *testing.T) {
	base := t.TempDir()
	secret := filepath.Join(base, "git-credentials")
	must(t, os.WriteFile(secret, []byte("https://alice:ghp_CANARY123@example.com\n"), 0o600))
	dir := filepath.Join(base, "lab")
	must(t, os.MkdirAll(dir, 0o755))
	evil := filepath.Join(dir, "main.hcl")
	must(t, os.Symlink(secret, evil))
	diags := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Bad", Subject: &hcl.Range{Filename: evil, Start: hcl.InitialPos, End: hcl.Pos{Line: 1, Column: 5, Byte: 4}}}}
	for n, f := range SourceFiles(nil, diags) {
		if strings.Contains(string(f.Bytes), "CANARY") {
			t.Errorf("%s was read from outside the lab's folder", n)
		}
	}
}
