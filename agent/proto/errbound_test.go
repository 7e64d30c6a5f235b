package proto

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrorBounded: an error a host answers with is cut to what the
// shipped agent ever says, each field within its bound (SECURITY 136);
// an honest error is kept as it came.
func TestErrorBounded(t *testing.T) {
	big := strings.Repeat("é", 4<<20) // two bytes a rune: cuts land on a rune's start
	honest := &Error{Code: CodeCommand, Message: "rxe.ensure: netlink: exit 1", Command: []string{"rdma", "link", "add", "rxe_eth1"}, ExitCode: 1, Stderr: "error: no such device\n"}
	tests := []struct {
		name string
		in   *Error
	}{
		{"honest", honest},
		{"message of 8 MiB", &Error{Code: CodeInternal, Message: big}},
		{"code of 8 MiB", &Error{Code: big}},
		{"stderr of 8 MiB", &Error{Code: CodeCommand, Stderr: big}},
		{"argument of 8 MiB", &Error{Code: CodeCommand, Command: []string{"true", big, "x"}}},
		{"a million arguments", &Error{Code: CodeCommand, Command: strings.Split(strings.Repeat("a ", 1<<20), " ")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.in.Bounded()
			if tt.in == honest && !reflect.DeepEqual(b, honest) {
				t.Fatalf("an honest error changed: %+v", b)
			}
			n := 0
			for _, a := range b.Command {
				n += len(a)
			}
			if len(b.Code) > 200 || len(b.Message) > MaxErrorMessage+100 || len(b.Stderr) > MaxErrorStderr+100 || n > MaxErrorCommand+200 {
				t.Errorf("code %d, message %d, stderr %d, command %d bytes (%d arguments): past the bounds", len(b.Code), len(b.Message), len(b.Stderr), n, len(b.Command))
			}
			for _, s := range append([]string{b.Code, b.Message, b.Stderr}, b.Command...) {
				if !utf8.ValidString(s) {
					t.Errorf("a cut inside a rune: %.40q", s)
				}
			}
		})
	}
}
