package vm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// consoleCap bounds a VM's console log. The guest's serial port is its
// root's to write (SECURITY 150): with qemu's -serial file: a guest that
// writes to /dev/ttyS0 without end filled the controller's disk. qemu now
// serves the port on a unix socket and the controller copies it into the
// log; past consoleCap bytes the log is moved to console.log.earlier (the
// one before it dropped) and a new one begun, so a VM's console never
// holds more than twice the cap and the newest output (a panic, a boot
// that stalled) is always in console.log.
const consoleCap = 16 << 20

// consoleEarlier is where a full console log goes.
func consoleEarlier(path string) string { return path + ".earlier" }

// consoleArgs are qemu's arguments for a serial port served on sock. No
// wait: a guest whose controller is gone (a detached run, a killed rlab)
// runs on, its serial output dropped by qemu.
func consoleArgs(sock string) []string {
	return []string{
		"-chardev", "socket,id=console,path=" + optPath(sock) + ",server=on,wait=off",
		"-serial", "chardev:console",
	}
}

// copyConsole connects to qemu's serial socket and copies what the guest
// writes into path, bounded by limit (consoleCap), until qemu closes it.
// It gives up connecting when exited is closed or after 30 s.
func copyConsole(sock, path string, limit int64, exited <-chan struct{}) error {
	var c net.Conn
	deadline := time.Now().Add(30 * time.Second)
	for {
		var err error
		if c, err = net.Dial("unix", sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("console %s: %w", sock, err)
		}
		select {
		case <-exited:
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer c.Close()
	return copyBounded(c, path, limit)
}

// copyBounded writes r into path, moving path to consoleEarlier(path)
// whenever it has limit bytes.
func copyBounded(r io.Reader, path string, limit int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	var n int64
	buf := make([]byte, 32<<10)
	for {
		k, rerr := r.Read(buf)
		for p := buf[:k]; len(p) > 0; {
			if n >= limit {
				f.Close()
				if err := os.Rename(path, consoleEarlier(path)); err != nil {
					return err
				}
				if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
					return err
				}
				n = 0
			}
			w := p[:min(int64(len(p)), limit-n)]
			m, err := f.Write(w)
			n += int64(m)
			if err != nil {
				return err
			}
			p = p[m:]
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) || errors.Is(rerr, net.ErrClosed) {
				return nil
			}
			return rerr
		}
	}
}
