package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// qmpConn is a QMP session: commands in order, events skipped, each
// (the greeting and capabilities too) within timeout.
type qmpConn struct {
	c       *net.UnixConn
	r       *bufio.Reader
	timeout time.Duration
}

// dialQMP connects to QEMU's monitor, waiting up to timeout for it to
// listen: QEMU binds the socket, then listens, and a busy host can stop it
// between the two (a connect in that gap is refused: seen at load 45).
func dialQMP(ctx context.Context, sock string, timeout time.Duration) (*qmpConn, error) {
	d := net.Dialer{Timeout: timeout}
	deadline := time.Now().Add(timeout)
	var nc net.Conn
	for {
		var err error
		nc, err = d.DialContext(ctx, "unix", sock)
		if err == nil {
			break
		}
		if !(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
	q := &qmpConn{c: nc.(*net.UnixConn), r: bufio.NewReader(nc), timeout: timeout}
	_ = q.c.SetDeadline(time.Now().Add(timeout))
	if _, err := q.r.ReadBytes('\n'); err != nil {
		q.Close()
		return nil, fmt.Errorf("qmp greeting: %w", err)
	}
	if _, err := q.do("qmp_capabilities", nil); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmpConn) Close() error { return q.c.Close() }

// do runs one command and returns its "return" value.
func (q *qmpConn) do(cmd string, args any) (json.RawMessage, error) {
	return q.doWith(cmd, args, nil)
}

// doWith sends the command with oob (SCM_RIGHTS) when given.
func (q *qmpConn) doWith(cmd string, args any, oob []byte) (json.RawMessage, error) {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	_ = q.c.SetDeadline(time.Now().Add(q.timeout))
	if _, _, err := q.c.WriteMsgUnix(b, oob, nil); err != nil {
		return nil, fmt.Errorf("qmp %s: %w", cmd, err)
	}
	for {
		line, err := q.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("qmp %s: %w", cmd, err)
		}
		var m struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Error != nil {
			return nil, fmt.Errorf("qmp %s: %s: %s", cmd, m.Error.Class, m.Error.Desc)
		}
		if m.Return != nil {
			return m.Return, nil
		}
	}
}

// sendFD hands f to QEMU under name (QMP getfd with SCM_RIGHTS).
func (q *qmpConn) sendFD(name string, f *os.File) error {
	if f == nil {
		return errors.New("no file")
	}
	_, err := q.doWith("getfd", map[string]any{"fdname": name}, syscall.UnixRights(int(f.Fd())))
	return err
}
