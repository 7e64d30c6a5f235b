package dist

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func TestNotEmbedded(t *testing.T) {
	_, err := Binary("plan9", "mips")
	if !errors.Is(err, ErrNotEmbedded) || !strings.Contains(err.Error(), "agent for plan9/mips not embedded: build rlab with `make build`") {
		t.Errorf("Binary(plan9, mips) error = %v", err)
	}
	if _, _, _, err := Packed("plan9", "mips"); !errors.Is(err, ErrNotEmbedded) {
		t.Errorf("Packed(plan9, mips) error = %v", err)
	}
}

// TestEmbeddedMatchesBuild checks, when `make agent` has run, that what is
// embedded inflates to what was built, that its recorded sha256 and size are
// the file's, and that it is smaller than the binary. With nothing built it
// skips (a plain `go test ./...` on a clean clone); the Makefile's test
// targets build the agent first and set RLAB_BIN (the rlab they built), and
// then a missing build fails: CI must check the agents it ships. A half
// build (one platform) always fails.
func TestEmbeddedMatchesBuild(t *testing.T) {
	var built [][]byte
	var missing []string
	for _, p := range Platforms {
		onDisk, err := os.ReadFile("build/" + FileName(p[0], p[1]))
		if err != nil {
			missing = append(missing, p[0]+"/"+p[1])
		}
		built = append(built, onDisk)
	}
	switch {
	case len(missing) == len(Platforms) && os.Getenv("RLAB_BIN") != "":
		t.Fatalf("RLAB_BIN is set (a Makefile test target, after `make build`) but no agent is in agent/dist/build: the embedded agents go unchecked")
	case len(missing) == len(Platforms):
		t.Skipf("no agent built in agent/dist/build (run make agent): nothing to compare the embedded agents with")
	case len(missing) > 0:
		t.Fatalf("agent/dist/build lacks %s while other platforms are built: run make agent", strings.Join(missing, ", "))
	}
	for i, p := range Platforms {
		onDisk := built[i]
		want := sha256.Sum256(onDisk)
		b, sum, err := SHA256(p[0], p[1])
		if err != nil {
			t.Fatalf("built but not embedded: %v", err)
		}
		if !bytes.Equal(b, onDisk) || sum != hex.EncodeToString(want[:]) {
			t.Errorf("%s/%s: embedded %d bytes sha256 %s, file %d bytes sha256 %x", p[0], p[1], len(b), sum, len(onDisk), want)
		}
		gz, psum, size, err := Packed(p[0], p[1])
		if err != nil || psum != sum || size != int64(len(onDisk)) {
			t.Errorf("%s/%s: Packed = sha256 %s, size %d, %v; want %s, %d", p[0], p[1], psum, size, err, sum, len(onDisk))
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err := io.ReadAll(zr); err != nil || !bytes.Equal(raw, onDisk) {
			t.Errorf("%s/%s: the gzip stream does not inflate to the build (%v)", p[0], p[1], err)
		}
		if zr.Header.Name != "" || !zr.Header.ModTime.IsZero() {
			t.Errorf("%s/%s: gzip header carries name %q, time %v (want gzip -n: reproducible)", p[0], p[1], zr.Header.Name, zr.Header.ModTime)
		}
		if len(gz) >= len(onDisk)*2/3 {
			t.Errorf("%s/%s: %d bytes gzip'd of %d: compression lost?", p[0], p[1], len(gz), len(onDisk))
		}
		t.Logf("%s/%s: %d bytes, %d gzip'd", p[0], p[1], len(onDisk), len(gz))
	}
}

func TestInflateChecksHash(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("agent"))
	zw.Close()
	good := sha256.Sum256([]byte("agent"))
	for _, tc := range []struct {
		name, sum string
		gz        []byte
		wantErr   string
	}{
		{name: "good", sum: hex.EncodeToString(good[:]), gz: buf.Bytes()},
		{name: "hash mismatch", sum: strings.Repeat("0", 64), gz: buf.Bytes(), wantErr: "inflates to sha256"},
		{name: "truncated", sum: hex.EncodeToString(good[:]), gz: buf.Bytes()[:buf.Len()-6], wantErr: "inflate embedded agent"},
		{name: "not gzip", sum: hex.EncodeToString(good[:]), gz: []byte("agent"), wantErr: "inflate embedded agent"},
	} {
		raw, err := inflate(tc.gz, tc.sum, "linux", "amd64")
		if tc.wantErr == "" {
			if err != nil || string(raw) != "agent" {
				t.Errorf("%s: %q, %v", tc.name, raw, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestGOARCH(t *testing.T) {
	for in, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "amd64": "amd64"} {
		if got, err := GOARCH(in); err != nil || got != want {
			t.Errorf("GOARCH(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"riscv64", "i686", ""} {
		if _, err := GOARCH(in); err == nil {
			t.Errorf("GOARCH(%q) accepted", in)
		}
	}
}
