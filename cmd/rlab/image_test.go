package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/image"
)

// `rlab image build` reuses a cached image of the same recipe and says so,
// with its size and build time; nothing is rebuilt.
func TestImageBuildCached(t *testing.T) {
	dir := t.TempDir()
	r := image.DefaultRecipe("")
	d := filepath.Join(dir, r.Name())
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(image.Image{Hash: r.Hash(), Release: r.Release, Kver: "6.1.0-56-amd64",
		RootBytes: 706 << 20, Apparent: 2 << 30, BuildTime: 119 * time.Second, BuiltAt: time.Date(2026, 11, 25, 23, 23, 0, 0, time.UTC)})
	files := map[string][]byte{"image.json": m, "root.ext4": []byte("x"), "vmlinuz": []byte("k"), "initrd.img": []byte("i")}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(d, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"image", "build", "--out", dir})
	if err := root.Execute(); err != nil {
		t.Fatalf("image build: %v\n%s", err, errb.String())
	}
	for _, want := range []string{d, "cached (built in 1m59s on 2026-11-25 23:23Z)", "kernel 6.1.0-56-amd64", "706 MiB allocated"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %s", errb.String())
	}
}
