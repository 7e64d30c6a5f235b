package main

import "testing"

func TestMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		hosts int
		env   string
		want  int64 // MiB, 0: none
	}{
		{hosts: 2},
		{hosts: 200}, // the default GC's peak is ~120 MiB here
		{hosts: 255},
		{hosts: 256, want: 112},
		{hosts: 1000, want: 251},     // 251.5: ~70 MiB above the class run's live heap at its peak
		{hosts: 1000, env: "500MiB"}, // the user's own limit stays
		{hosts: 1000, env: "off"},
		{hosts: 4000, want: 814},
	} {
		if got := memoryLimit(c.hosts, c.env) / mib; got != c.want {
			t.Errorf("memoryLimit(%d hosts, GOMEMLIMIT=%q) = %d MiB, want %d", c.hosts, c.env, got, c.want)
		}
	}
}
