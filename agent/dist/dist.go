// Package dist holds the rlab-agent binaries that `make agent` builds, one
// per supported platform, embedded into rlab so a single rlab binary is all a
// user installs. They are embedded gzip'd (gzip -9 -n, with the sha256 of
// the binary beside each): that is what goes to a host on the wire, and it
// keeps rlab about 5 MB smaller. A clean clone embeds only bin/README: the
// build still works and Binary and Packed say how to get the agents.
//
// It imports only the standard library (internal/archtest checks it).
package dist

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
)

//go:embed bin
var bin embed.FS

// ErrNotEmbedded is returned (wrapped) by Binary and Packed when this build
// of rlab carries no agent for the platform.
var ErrNotEmbedded = errors.New("agent not embedded")

// Platforms are the GOOS/GOARCH pairs rlab builds the agent for.
var Platforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}}

// FileName is the name of the agent binary for a platform; embedded are
// FileName+".gz" and FileName+".sha256".
func FileName(goos, goarch string) string {
	return fmt.Sprintf("rlab-agent-%s-%s", goos, goarch)
}

// agent is one embedded agent, decoded at most once per process.
type agent struct {
	once sync.Once
	gz   []byte
	sum  string
	size int64
	err  error

	rawOnce sync.Once
	raw     []byte
	rawErr  error
}

var (
	mu     sync.Mutex
	agents = map[string]*agent{}
)

func get(goos, goarch string) *agent {
	mu.Lock()
	defer mu.Unlock()
	name := FileName(goos, goarch)
	a, ok := agents[name]
	if !ok {
		a = &agent{}
		agents[name] = a
	}
	a.once.Do(func() { a.gz, a.sum, a.size, a.err = load(goos, goarch) })
	return a
}

// load reads the embedded gzip stream and its sha256 without inflating it:
// the size comes from the gzip trailer (ISIZE, the size mod 2^32; agents are
// far smaller than 4 GiB).
func load(goos, goarch string) ([]byte, string, int64, error) {
	name := "bin/" + FileName(goos, goarch)
	gz, err := bin.ReadFile(name + ".gz")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", 0, fmt.Errorf("agent for %s/%s not embedded: build rlab with `make build`: %w", goos, goarch, ErrNotEmbedded)
	}
	if err != nil {
		return nil, "", 0, fmt.Errorf("read embedded agent for %s/%s: %w", goos, goarch, err)
	}
	sumFile, err := bin.ReadFile(name + ".sha256")
	if err != nil {
		return nil, "", 0, fmt.Errorf("read embedded agent for %s/%s: its sha256: %w (rebuild with `make build`)", goos, goarch, err)
	}
	sum := strings.TrimSpace(string(sumFile))
	if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
		return nil, "", 0, fmt.Errorf("embedded agent for %s/%s: %s.sha256 holds %q, not a sha256 (rebuild with `make build`)", goos, goarch, FileName(goos, goarch), sum)
	}
	if len(gz) < 18 || gz[0] != 0x1f || gz[1] != 0x8b {
		return nil, "", 0, fmt.Errorf("embedded agent for %s/%s: %s.gz is not a gzip stream (rebuild with `make build`)", goos, goarch, FileName(goos, goarch))
	}
	return gz, sum, int64(binary.LittleEndian.Uint32(gz[len(gz)-4:])), nil
}

// Packed returns the agent for goos/goarch as shipped: its gzip stream, and
// the sha256 (hex) and size of the binary it inflates to — the name it is
// installed under on a host. Nothing is inflated or hashed here: a warm run
// needs only the hash. (The signature is engine/remote.Packed's.)
func Packed(goos, goarch string) (gz []byte, sum string, size int64, err error) {
	a := get(goos, goarch)
	return a.gz, a.sum, a.size, a.err
}

// Binary returns the agent binary for goos/goarch, inflated once per
// process and checked against its embedded sha256.
func Binary(goos, goarch string) ([]byte, error) {
	a := get(goos, goarch)
	if a.err != nil {
		return nil, a.err
	}
	a.rawOnce.Do(func() { a.raw, a.rawErr = inflate(a.gz, a.sum, goos, goarch) })
	return a.raw, a.rawErr
}

func inflate(gz []byte, sum, goos, goarch string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("inflate embedded agent for %s/%s: %w", goos, goarch, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("inflate embedded agent for %s/%s: %w", goos, goarch, err)
	}
	if s := sha256.Sum256(raw); hex.EncodeToString(s[:]) != sum {
		return nil, fmt.Errorf("embedded agent for %s/%s: inflates to sha256 %x, its .sha256 says %s (rebuild with `make build`)", goos, goarch, s, sum)
	}
	return raw, nil
}

// SHA256 returns the agent binary for goos/goarch and its sha256 (hex), the
// name it is installed under on a host.
func SHA256(goos, goarch string) ([]byte, string, error) {
	b, err := Binary(goos, goarch)
	if err != nil {
		return nil, "", err
	}
	return b, get(goos, goarch).sum, nil
}

// GOARCH maps `uname -m` output to a GOARCH.
func GOARCH(unameM string) (string, error) {
	switch unameM {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("no rlab agent for machine %q (have amd64 and arm64)", unameM)
}
