package proto

import "testing"

// BenchmarkCheckBounds: what the client's check of an answer costs, for a
// full files.list page (10,000 files) and a host's facts.
func BenchmarkCheckBounds(b *testing.B) {
	l := FilesList{Root: "/home/u/.cache/rlab/runs/r/h", Files: make([]FileInfo, FilesListPage)}
	for i := range l.Files {
		l.Files[i] = FileInfo{Path: "wl.e.exec.r0.stdout", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	}
	f := Facts{Hostname: "h", Netdevs: make([]Netdev, 64), Tools: Tools{}}
	for i := range f.Netdevs {
		f.Netdevs[i] = Netdev{Name: "eth0", State: "up", Addrs: []string{"10.0.0.1/24", "fe80::1/64"}}
	}
	for i := range 50 {
		f.Tools[string(rune('a'+i%26))+"tool"+string(rune('0'+i/26))] = Tool{Path: "/usr/bin/x", Version: "1.0"}
	}
	for _, bc := range []struct {
		name string
		v    any
	}{{"files.list page", &l}, {"facts", &f}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := CheckBounds(bc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
