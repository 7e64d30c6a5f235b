package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

func TestBundleCommand(t *testing.T) {
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "a.log"), []byte("alpha"), 0o600)
	req, _ := json.Marshal(proto.BundleRequest{Files: []proto.FileInfo{{Path: "a.log", Size: 5}}})
	tests := []struct {
		name    string
		args    []string
		stdin   string
		code    int
		wantTar bool
		wantErr string
	}{
		{name: "bundles", args: []string{"bundle", "--work-dir", wd}, stdin: string(req), wantTar: true},
		{name: "no work dir", args: []string{"bundle"}, stdin: string(req), code: 2, wantErr: "want --work-dir"},
		{name: "extra argument", args: []string{"bundle", "--work-dir", wd, "x"}, stdin: string(req), code: 2, wantErr: "no arguments"},
		{name: "not JSON", args: []string{"bundle", "--work-dir", wd}, stdin: "a.log\n", code: 2, wantErr: "decode request"},
		{name: "work dir refused", args: []string{"bundle", "--work-dir", filepath.Join(wd, "a.log")}, stdin: string(req), code: 1, wantErr: "not a directory"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := run(tc.args, strings.NewReader(tc.stdin), &out, &errb)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, code, tc.code, errb.String())
		}
		if tc.wantErr != "" && !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%s: stderr %q lacks %q", tc.name, errb.String(), tc.wantErr)
		}
		if !tc.wantTar {
			if out.Len() != 0 {
				t.Errorf("%s: wrote %d bytes to stdout", tc.name, out.Len())
			}
			continue
		}
		h, err := tar.NewReader(&out).Next()
		if err != nil || h.Name != "a.log" || h.Size != 5 {
			t.Errorf("%s: first entry %+v, %v", tc.name, h, err)
		}
	}
}
