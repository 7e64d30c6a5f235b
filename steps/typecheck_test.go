package steps

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestWrongParamsDoNotCompile: a call through a Host is typed, so passing a
// method the params of another, taking its result as another type, or
// naming a method as a string does not compile. It builds
// testdata/typecheck/right (the same calls, right types: must build) and
// testdata/typecheck/wrong, which must fail with a type error on exactly
// the lines marked "// ERROR:".
func TestWrongParamsDoNotCompile(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to prove calls are typed: %v", err)
	}
	build := func(dir string) (string, error) {
		cmd := exec.Command(gobin, "build", "-o", os.DevNull, "-gcflags=-e", "./"+filepath.ToSlash(dir))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := build("testdata/typecheck/right"); err != nil {
		t.Fatalf("the control with the right types does not build: %v\n%s", err, out)
	}
	src, err := os.ReadFile("testdata/typecheck/wrong/main.go")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		if _, why, ok := strings.Cut(sc.Text(), "// ERROR: "); ok {
			want[n] = why
		}
	}
	if len(want) < 3 {
		t.Fatalf("testdata/typecheck/wrong marks %d lines, want at least 3", len(want))
	}
	out, err := build("testdata/typecheck/wrong")
	if err == nil {
		t.Fatalf("testdata/typecheck/wrong built: a call with the wrong types compiles")
	}
	got := map[int]bool{}
	for _, m := range regexp.MustCompile(`(?m)main\.go:(\d+):\d+: (.*)$`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		if _, ok := want[n]; !ok {
			t.Errorf("unexpected build error on line %d: %s", n, m[2])
		}
		got[n] = true
	}
	for n, why := range want {
		if !got[n] {
			t.Errorf("line %d (%s) compiled; the build said:\n%s", n, why, out)
		}
	}
}
