package main

import (
	"errors"
	"strings"
	"testing"
)

// TestUnknownCommand: a word that names no command is an error (exit 1)
// on one printable line with its suggestion, for the root and for the
// groups (image, mux) alike, where cobra printed help and exited 0; the
// bare group still prints its help.
func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string // in stderr's error line ("" = none)
		out  string // in stdout
	}{
		{[]string{"valdate"}, exitFail, `unknown command "valdate" for "rlab"; did you mean "validate"?`, ""},
		{[]string{"image", "lsit"}, exitFail, `unknown command "lsit" for "rlab image"; did you mean "list"?`, ""},
		{[]string{"mux", "foo"}, exitFail, `unknown command "foo" for "rlab mux" (commands: status, stop;`, ""},
		{[]string{"mux"}, exitOK, "", "rlab mux status"},
		{[]string{"image"}, exitOK, "", "Available Commands"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			root := newRootCmd()
			var out strings.Builder
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			err := root.Execute()
			code := exitOK
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				code = exitFail
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d (err %v)", code, tc.code, err)
			}
			if tc.want != "" {
				lines := errorLines(err)
				if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
					t.Errorf("error lines %q, want one line with %q", lines, tc.want)
				}
				if strings.Contains(strings.Join(lines, "\n"), `\t`) {
					t.Errorf("error lines %q carry an escaped tab", lines)
				}
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("output %q lacks %q", out.String(), tc.out)
			}
		})
	}
}
