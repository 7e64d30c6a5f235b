// Package dist holds the rlab-agent binaries that `make agent` builds, one
// per supported platform, embedded into rlab so a single rlab binary is all a
// user installs. A clean clone embeds only bin/README: the build still works
// and Binary says how to get the agents.
package dist

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
)

//go:embed bin
var bin embed.FS

// ErrNotEmbedded is returned (wrapped) by Binary when this build of rlab
// carries no agent for the platform.
var ErrNotEmbedded = errors.New("agent not embedded")

// Platforms are the GOOS/GOARCH pairs rlab builds the agent for.
var Platforms = [][2]string{{"linux", "amd64"}, {"linux", "arm64"}}

// FileName is the embedded file name of the agent for a platform.
func FileName(goos, goarch string) string {
	return fmt.Sprintf("rlab-agent-%s-%s", goos, goarch)
}

// Binary returns the agent binary for goos/goarch.
func Binary(goos, goarch string) ([]byte, error) {
	b, err := bin.ReadFile("bin/" + FileName(goos, goarch))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("agent for %s/%s not embedded: build rlab with `make build`: %w", goos, goarch, ErrNotEmbedded)
	}
	if err != nil {
		return nil, fmt.Errorf("read embedded agent for %s/%s: %w", goos, goarch, err)
	}
	return b, nil
}

// SHA256 returns the agent binary for goos/goarch and its sha256 (hex), the
// name it is installed under on a host.
func SHA256(goos, goarch string) ([]byte, string, error) {
	b, err := Binary(goos, goarch)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:]), nil
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
