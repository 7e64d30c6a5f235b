package vm

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/kinds/builtin"
)

// The test binary plays two extra roles, chosen by RLAB_VM_TEST_ROLE:
// "controller" starts a fake qemu the way Boot does and then waits to be
// killed; "qemu" is that fake qemu (opens its QMP socket and sleeps).
func TestMain(m *testing.M) {
	switch os.Getenv("RLAB_VM_TEST_ROLE") {
	case "qemu":
		fakeQEMU()
		return
	case "qemu-dies-once":
		// The first start dies at once (a guest that panicked while
		// booting), later ones run as the fake qemu.
		marker := filepath.Join(os.Getenv("RLAB_VM_TEST_DIR"), "died")
		if _, err := os.Stat(marker); err != nil {
			os.WriteFile(marker, nil, 0o600)
			for i, a := range os.Args { // up, as Boot sees it: its QMP socket
				if a == "-qmp" && i+1 < len(os.Args) {
					net.Listen("unix", strings.TrimPrefix(strings.SplitN(os.Args[i+1], ",", 2)[0], "unix:"))
				}
				if sock := consoleSockArg(os.Args, i); sock != "" {
					if l, err := net.Listen("unix", sock); err == nil {
						go func() {
							if c, err := l.Accept(); err == nil {
								c.Write([]byte("Kernel panic\n"))
								c.Close()
							}
						}()
					}
				}
			}
			time.Sleep(time.Second)
			os.Exit(1)
		}
		fakeQEMU()
		return
	case "controller":
		fakeController()
		return
	}
	builtin.Register() // the built-in tool families, as cmd/rlab registers them
	os.Exit(m.Run())
}

// consoleSockArg is the path of the serial socket when args[i] is the
// -chardev of consoleArgs, else "".
func consoleSockArg(args []string, i int) string {
	if args[i] != "-chardev" || i+1 >= len(args) || !strings.HasPrefix(args[i+1], "socket,id=console,path=") {
		return ""
	}
	return strings.SplitN(strings.TrimPrefix(args[i+1], "socket,id=console,path="), ",", 2)[0]
}

func fakeQEMU() {
	for i, a := range os.Args {
		if a == "-qmp" && i+1 < len(os.Args) {
			p := strings.TrimPrefix(strings.SplitN(os.Args[i+1], ",", 2)[0], "unix:")
			if l, err := net.Listen("unix", p); err == nil {
				defer l.Close()
			}
		}
	}
	time.Sleep(10 * time.Minute)
}

func fakeController() {
	dir := os.Getenv("RLAB_VM_TEST_DIR")
	os.Setenv("RLAB_VM_TEST_ROLE", "qemu")
	self, _ := os.Executable()
	s := &Set{opts: Options{QEMU: self}}
	v := &VM{Machine: Machine{Name: "a"}, dir: dir}
	qmp := filepath.Join(dir, "qmp.sock")
	if err := s.exec(v, []string{"-qmp", "unix:" + qmp + ",server=on,wait=off"}, filepath.Join(dir, "qemu.pid"), qmp, nil); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("qemu", v.PID)
	time.Sleep(10 * time.Minute)
}

// A controller killed with SIGKILL (no chance to clean up) leaves no qemu:
// qemu runs with a parent-death signal.
func TestControllerDeathKillsQEMU(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctl := exec.Command(self)
	ctl.Env = append(os.Environ(), "RLAB_VM_TEST_ROLE=controller", "RLAB_VM_TEST_DIR="+dir)
	out, err := ctl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	defer ctl.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "qemu" {
		t.Fatalf("controller said %q", line)
	}
	pid, _ := strconv.Atoi(f[1])
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("fake qemu %d not running: %v", pid, err)
	}
	if err := ctl.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = ctl.Wait()
	// The orphan is reaped by init (or our subreaper) once the kernel has
	// delivered the parent-death signal; poll, bounded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := procStartTime(pid); err != nil {
			return // gone
		}
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(st), ") Z ") {
			return // dead, not yet reaped
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("qemu pid %d survived its controller", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
