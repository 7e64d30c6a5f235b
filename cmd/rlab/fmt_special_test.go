package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFmtFolderSpecialFiles: rlab fmt reads a lab folder's files as
// validate does (found in attack round 11, high: fmt read each *.hcl with
// os.ReadFile, so in a course repository's folder a FIFO named *.hcl hung
// `rlab fmt` (and `fmt -check` in CI) for good, a symlink to /dev/zero took
// memory without bound, and a symlink to an HCL file outside the folder
// (~/.terraformrc, a token in it) was printed by -diff and replaced by a
// formatted copy of that file inside the folder). Each is now refused by
// name, the folder's other files formatted, the outside file untouched.
func TestFmtFolderSpecialFiles(t *testing.T) {
	ugly := "lab \"x\" {\ndescription=\"d\"\n}\n"
	pretty := "lab \"x\" {\n  description = \"d\"\n}\n"
	outside := filepath.Join(t.TempDir(), "terraformrc")
	secret := "credentials \"app.example.com\" {\ntoken=\"CANARY-TOKEN\"\n}\n"
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symlink out of the lab's folder"},
		{"symlink to an HCL file outside", func(p string) error { return os.Symlink(outside, p) }, "symlink out of the lab's folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(os.WriteFile(outside, []byte(secret), 0o600))
			dir := t.TempDir()
			must(os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(ugly), 0o600))
			zz := filepath.Join(dir, "zz.hcl")
			must(tc.make(zz))
			type result struct {
				out, errs string
				code      int
			}
			done := make(chan result, 1)
			go func() {
				out, errs, code := rlab(t, "fmt", "-diff", dir)
				done <- result{out, errs, code}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("rlab fmt of the folder did not end within 10 s")
			}
			if r.code == 0 || !strings.Contains(r.errs, "zz.hcl") || !strings.Contains(r.errs, tc.want) {
				t.Errorf("exit %d, want zz.hcl refused (%q); stderr:\n%s", r.code, tc.want, r.errs)
			}
			if strings.Contains(r.out+r.errs, "CANARY") {
				t.Errorf("fmt showed the file outside the folder:\n%s%s", r.out, r.errs)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "a.hcl")); string(b) != pretty {
				t.Errorf("the folder's other file was not formatted:\n%s", b)
			}
			if st, err := os.Lstat(zz); err != nil || st.Mode().IsRegular() {
				t.Errorf("zz.hcl was replaced by a regular file (a copy of what it named)")
			}
			if b, _ := os.ReadFile(outside); string(b) != secret {
				t.Errorf("the file outside the folder changed:\n%s", b)
			}
		})
	}
}
