package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rlab-dev/rlab/agent/proto"
)

// ReadHello skips what a login script printed before the hello, at most
// maxJunk bytes, and returns it too (engine/remote's warm start prints a
// probe there when the agent is not cached).
func ReadHello(r *bufio.Reader, maxJunk int) (proto.Hello, []byte, error) {
	var junk []byte
	var first string
	for {
		line, err := ReadLine(r, proto.MaxLine)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if first != "" {
					return proto.Hello{}, junk, fmt.Errorf("it exited before its hello (stdout began %q)", Truncate(first, 120))
				}
				return proto.Hello{}, junk, errors.New("it exited before its hello")
			}
			return proto.Hello{}, junk, fmt.Errorf("read hello: %w", err)
		}
		trimmed := bytes.TrimSpace(line)
		if bytes.HasPrefix(trimmed, []byte("{")) {
			var h proto.Hello
			if json.Unmarshal(trimmed, &h) == nil && h.Magic == proto.Magic {
				// Its work dir, version and boot id are kept for the run
				// and quoted in errors: each within its bound.
				if err := proto.CheckBounds(&h); err != nil {
					return proto.Hello{}, junk, fmt.Errorf("its hello is refused: %w", err)
				}
				return h, junk, nil
			}
		}
		if first == "" {
			first = string(trimmed)
		}
		junk = append(junk, line...)
		if len(junk) > maxJunk {
			return proto.Hello{}, junk, fmt.Errorf("no hello in the first %d bytes of its output (a login script printing a lot? it began %q)", maxJunk, Truncate(first, 120))
		}
	}
}

// ReadLine reads one newline-terminated line of at most max bytes; a last
// line without its newline is returned with io.ErrUnexpectedEOF.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		frag, err := r.ReadSlice('\n')
		buf = append(buf, frag...)
		if len(buf) > max {
			return nil, fmt.Errorf("line longer than %d bytes", max)
		}
		if err == nil {
			return buf, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(buf) > 0 && errors.Is(err, io.EOF) {
			return buf, io.ErrUnexpectedEOF
		}
		return nil, err
	}
}
