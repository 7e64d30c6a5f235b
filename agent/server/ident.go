package server

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
)

// bootID is this boot's id, read once; empty when it cannot be read.
var bootID = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id") // not bootIDPath, which tests move
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// procIdentity is what tells pid from a later process reusing it
// (proto.ProcIdentity). The agent reads it while pid is its unreaped child
// (or itself), so it cannot be another process's yet.
func procIdentity(pid int) proto.ProcIdentity {
	id := proto.ProcIdentity{BootID: bootID()}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proto.ProcIdentity{}
	}
	if id.StartTicks, _ = proto.ParseStatStartTicks(b); id.StartTicks == 0 || id.BootID == "" {
		return proto.ProcIdentity{}
	}
	return id
}
