package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
)

// A hostile agent is a real agent that lies on the wire, so the controller's
// defences can be tested against the real thing (security issue: a
// malicious or compromised lab host). It is reachable only from this
// package's tests and from binaries built with -tags rlabhostile
// (EnableHostile); a normal build has no way to set it.

// HostileModes lists the ways a hostile agent misbehaves.
var HostileModes = []string{
	"banner",      // a login-script banner on stdout before the hello (benign; must be skipped)
	"bad-magic",   // the hello has another magic
	"wrong-proto", // the hello speaks protocol 999
	"wrong-hash",  // the hello claims another binary's hash
	"silent",      // writes nothing at all, not even the hello
	"malformed",   // every reply after the hello is broken JSON
	"huge-line",   // every reply after the hello is one line longer than proto.MaxLine
	"endless",     // every reply is replaced by events for its id, forever
	"traversal",   // file paths in results escape the work dir (../, absolute)
	"mute",        // answers the hello, then never writes anything again (a stuck host)
}

func validHostile(mode string) error {
	if !slices.Contains(HostileModes, mode) {
		return fmt.Errorf("hostile mode %q: want one of %s", mode, strings.Join(HostileModes, ", "))
	}
	return nil
}

// hostileWriter receives exactly one protocol line per Write (writeJSON's
// contract) and misbehaves according to mode.
type hostileWriter struct {
	w     io.Writer
	mode  string
	lines int
}

func (h *hostileWriter) Write(line []byte) (int, error) {
	n := len(line)
	h.lines++
	first := h.lines == 1
	var err error
	switch h.mode {
	case "silent":
		return n, nil
	case "mute":
		if !first {
			return n, nil
		}
	case "banner":
		if first {
			_, err = io.WriteString(h.w, "Welcome to the lab host!\nLast login: never\n")
			if err != nil {
				return 0, err
			}
		}
	case "bad-magic", "wrong-proto", "wrong-hash":
		if first {
			var hello proto.Hello
			if json.Unmarshal(line, &hello) == nil {
				switch h.mode {
				case "bad-magic":
					hello.Magic = "not-rlab"
				case "wrong-proto":
					hello.Proto = 999
				case "wrong-hash":
					hello.Hash = strings.Repeat("0", 64)
				}
				b, _ := json.Marshal(hello)
				line = append(b, '\n')
			}
		}
	case "malformed":
		if !first {
			line = []byte(`{"id": 1, "result": {"unterminated` + "\n")
		}
	case "huge-line":
		if !first {
			big := bytes.Repeat([]byte("A"), proto.MaxLine+1)
			line = append(append([]byte(`{"id":1,"result":"`), big...), "\"}\n"...)
		}
	case "endless":
		var env proto.Envelope
		if !first && json.Unmarshal(line, &env) == nil && env.Event == "" {
			ev, _ := json.Marshal(proto.Event{ID: env.ID, Event: proto.EventLog, Data: json.RawMessage(`{"msg":"still going"}`)})
			ev = append(ev, '\n')
			for {
				if _, err := h.w.Write(ev); err != nil {
					return 0, err
				}
			}
		}
	case "traversal":
		if !first {
			line = traversalRewrite(line)
		}
	}
	if _, err = h.w.Write(line); err != nil {
		return 0, err
	}
	return n, nil
}

// traversalRewrite makes every file path in a result point out of the work
// dir, alternating ../ escapes and absolute paths.
func traversalRewrite(line []byte) []byte {
	var resp struct {
		ID     uint64         `json:"id"`
		Result map[string]any `json:"result"`
		Error  *proto.Error   `json:"error,omitempty"`
	}
	if json.Unmarshal(line, &resp) != nil || resp.Result == nil {
		return line
	}
	evil := []string{"../../../../tmp/rlab-escape", "/etc/rlab-escape", "sub/../../rlab-escape"}
	i := 0
	if files, ok := resp.Result["files"].([]any); ok {
		for _, f := range files {
			if m, ok := f.(map[string]any); ok {
				m["path"] = evil[i%len(evil)]
				i++
			}
		}
	}
	for _, k := range []string{"path", "stdout_file", "stderr_file"} {
		if _, ok := resp.Result[k]; ok {
			resp.Result[k] = evil[i%len(evil)]
			i++
		}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return line
	}
	return append(b, '\n')
}
