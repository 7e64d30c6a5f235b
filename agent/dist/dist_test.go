package dist

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestBinaryNotEmbedded(t *testing.T) {
	_, err := Binary("plan9", "mips")
	if !errors.Is(err, ErrNotEmbedded) || !strings.Contains(err.Error(), "agent for plan9/mips not embedded: build rlab with `make build`") {
		t.Errorf("Binary(plan9, mips) error = %v", err)
	}
}

// TestEmbeddedMatchesBuild checks, when `make agent` has run, that what is
// embedded is what was built and that its hash is the file's sha256.
func TestEmbeddedMatchesBuild(t *testing.T) {
	for _, p := range Platforms {
		onDisk, err := os.ReadFile("bin/" + FileName(p[0], p[1]))
		if err != nil {
			t.Logf("%s/%s not built (run make agent); skipping", p[0], p[1])
			continue
		}
		b, sum, err := SHA256(p[0], p[1])
		if err != nil {
			t.Fatalf("built but not embedded: %v", err)
		}
		want := sha256.Sum256(onDisk)
		if len(b) != len(onDisk) || sum != hex.EncodeToString(want[:]) {
			t.Errorf("%s/%s: embedded %d bytes sha256 %s, file %d bytes", p[0], p[1], len(b), sum, len(onDisk))
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
