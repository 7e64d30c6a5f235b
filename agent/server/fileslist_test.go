package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// TestFilesListPages: a work dir with more files than a page is listed in
// pages, in path order, each after the last path of the one before, with
// More on all but the last, and together every file once.
func TestFilesListPages(t *testing.T) {
	c, srv := startAgent(t, Options{})
	const n = proto.FilesListPage + 50
	var want []string
	for i := range n {
		name := fmt.Sprintf("f%06d", i)
		if err := os.WriteFile(filepath.Join(srv.WorkDir(), name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	sort.Strings(want)
	var got []string
	after, pages := "", 0
	for {
		var page proto.FilesList
		c.mustCall(proto.MethodFilesList, proto.FilesListOptions{After: after}, &page)
		pages++
		if len(page.Files) > proto.FilesListPage {
			t.Fatalf("page of %d files, over %d", len(page.Files), proto.FilesListPage)
		}
		for _, f := range page.Files {
			if f.Path <= after || f.SHA256 == "" {
				t.Fatalf("page %d: %+v (after %q)", pages, f, after)
			}
			got = append(got, f.Path)
			after = f.Path
		}
		if !page.More {
			break
		}
		if pages > 10 {
			t.Fatal("more than 10 pages")
		}
	}
	if pages != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%d pages, %d files; want 2 pages, the %d files in order", pages, len(got), n)
	}
}
