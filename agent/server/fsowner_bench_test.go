package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// go test -run '^$' -bench 'FilesAsOwner' -count 5 ./agent/server/  (as root)
//
// BenchmarkFilesAsOwner is files.read, files.write and files.list of a
// root agent working for a user (nobody): what each call's own file work
// costs, with the round trip through the serve loop.
func BenchmarkFilesAsOwner(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: a root agent working for a user")
	}
	const nobody = 65534
	base := ownedTempDir(b, nobody)
	c, _ := startAgent(b, Options{WorkDir: filepath.Join(base, "w"), Owner: &Owner{UID: nobody, GID: nobody}})
	for i := range 20 {
		c.mustCall(proto.MethodFilesWrite, proto.FilesWriteParams{Path: filepath.Join("d", string(rune('a'+i))+".txt"), Data: []byte("hello")}, nil)
	}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if e := c.call(proto.MethodFilesRead, proto.FilesReadParams{Path: "d/a.txt"}, nil); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if e := c.call(proto.MethodFilesWrite, proto.FilesWriteParams{Path: "p/q/main.c", Data: []byte("int main;")}, nil); e != nil {
				b.Fatal(e)
			}
		}
	})
	b.Run("list20", func(b *testing.B) {
		for b.Loop() {
			if e := c.call(proto.MethodFilesList, proto.FilesListParams{Dir: "d"}, nil); e != nil {
				b.Fatal(e)
			}
		}
	})
}

// BenchmarkAsUser is asUser's own cost around nothing: the locked thread
// and the setgroups/setfsgid/setfsuid calls and their undoing, what each
// file call of a root agent working for a user pays.
func BenchmarkAsUser(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: a root agent working for a user")
	}
	const nobody = 65534
	w, err := openWorkDir(ownedTempDir(b, nobody), &Owner{UID: nobody, GID: nobody})
	if err != nil {
		b.Fatal(err)
	}
	defer w.close()
	for b.Loop() {
		if err := w.asUser("nothing", func() error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
