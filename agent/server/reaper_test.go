package server

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestChildren: the children files of the process's threads name the same
// children as the scan of every process's stat, for none and for several
// (started from different threads of the Go runtime).
func TestChildren(t *testing.T) {
	if _, ok := taskChildren(os.Getpid()); !ok {
		t.Skip("kernel without /proc/PID/task/TID/children")
	}
	for _, n := range []int{0, 1, 5} {
		var cmds []*exec.Cmd
		var want []int
		for i := 0; i < n; i++ {
			c := exec.Command("sleep", "30")
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
			want = append(want, c.Process.Pid)
		}
		got, _ := taskChildren(os.Getpid())
		scan := scanChildren(os.Getpid())
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		// Other tests' children may come and go; ours must be in both.
		for _, p := range want {
			if !slices.Contains(got, p) || !slices.Contains(scan, p) {
				t.Errorf("%d children: pid %d: task files %v, scan %v", n, p, got, scan)
			}
		}
	}
}
