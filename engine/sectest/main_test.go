package sectest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// TestMain: started as "tcpdump" (a symlink a test put first in PATH), this
// binary records the argv it was given and becomes the real tcpdump.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "tcpdump" {
		os.WriteFile(os.Getenv("RLAB_SECTEST_ARGV"), []byte(strings.Join(os.Args, "\x00")), 0o600)
		real := os.Getenv("RLAB_SECTEST_TCPDUMP")
		err := syscall.Exec(real, append([]string{real}, os.Args[1:]...), os.Environ())
		os.Stderr.WriteString("exec " + real + ": " + err.Error() + "\n")
		os.Exit(127)
	}
	builtin.Register() // the built-in tool families, as cmd/rlab registers them
	os.Exit(m.Run())
}
