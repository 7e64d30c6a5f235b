package main

import (
	"fmt"
	"strings"
)

// target is one bed host as the generated files name it.
type target struct {
	Name string // lab host name and Ansible inventory name
	Addr string
}

// sshConf is what every side logs in with: the bed's user, key and
// known_hosts (host keys always verified).
type sshConf struct {
	User       string
	KeyFile    string
	KnownHosts string
}

// labHCL is the lab `rlab check` prepares: every host with become (creating
// rxe needs root) and one rxe on its eth0, so preflight has real work (the
// module, root, the netdev, its IPv4 address and state, free disk).
func labHCL(c sshConf, hosts []target) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lab \"prepare\" {\n  description = \"bench/prepare: %d hosts, one rxe each\"\n}\n\n", len(hosts))
	fmt.Fprintf(&b, "ssh {\n  user          = %q\n  identity_file = %q\n  known_hosts   = %q\n}\n", c.User, c.KeyFile, c.KnownHosts)
	for _, h := range hosts {
		fmt.Fprintf(&b, "\nhost %q {\n  address = %q\n  become  = true\n}\n", h.Name, h.Addr)
		fmt.Fprintf(&b, "rxe %q {\n  host   = host.%s\n  netdev = \"eth0\"\n}\n", h.Name, h.Name)
	}
	return b.String()
}

// inventory is the Ansible inventory of the same hosts, group "bed".
func inventory(hosts []target) string {
	var b strings.Builder
	b.WriteString("[bed]\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "%s ansible_host=%s\n", h.Name, h.Addr)
	}
	b.WriteString("\n[bed:vars]\nansible_python_interpreter=/usr/bin/python3\n")
	return b.String()
}

// agentJob is what the playbook ships and runs: the very agent binary rlab
// embeds, installed as rlab installs it (a per-user cache folder named by
// its sha256), then run as root for the user (become, --owner) for one
// facts request on stdin, as rlab's controller asks it.
type agentJob struct {
	Src     string // local copy of the agent
	SHA1    string // the copy module's checksum parameter (it verifies the transfer with SHA-1)
	Dir     string // remote folder: <home>/.cache/rlab-ansible/hosts/{{ inventory_hostname }}/agent/<sha256>
	WorkDir string // remote work dir parent for the agent runs
	Owner   string // uid:gid of the login user
}

// playbook does the job of `rlab check` on the lab of labHCL: ship the agent
// (copy, skipped when the checksum matches), run it for facts, and assert
// what preflight checks for one rxe on eth0. The assertion fails on a kernel
// without rdma_rxe, as rlab check reports a problem there; ignore_errors keeps
// the failure a result (the recap's "ignored") rather than ending the play.
func playbook(j agentJob) string {
	return fmt.Sprintf(`- name: prepare (ship the agent, facts, preflight)
  hosts: bed
  gather_facts: false
  tasks:
    - name: ship the agent
      ansible.builtin.copy:
        src: %q
        dest: %q
        mode: "0755"
        checksum: %q
    - name: facts from the agent
      become: true
      ansible.builtin.command:
        argv: [%q, serve, --run-id, ansible, --work-dir, "%s/{{ inventory_hostname }}", --owner, %q]
        stdin: '{"id":1,"method":"facts"}'
      register: agent
      changed_when: false
    - name: preflight (one rxe on eth0)
      vars:
        f: "{{ (agent.stdout_lines | last | from_json).result }}"
        nd: "{{ f.netdevs | selectattr('name', 'equalto', 'eth0') | list }}"
      ansible.builtin.assert:
        quiet: true
        that:
          - f.rxe_module != 'absent'
          - f.root
          - nd | length == 1
          - nd[0].state != 'down'
          - nd[0].addrs | default([]) | select('match', '^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+/') | list | length > 0
          - f.work_dir_free_bytes >= 67108864
      ignore_errors: true
`, j.Src, j.Dir+"/", j.SHA1, j.Dir+"/rlab-agent", j.WorkDir, j.Owner)
}

// ansibleCfg is an ansible.cfg for forks = n, pipelining on, fact gathering
// off, host keys checked against the bed's known_hosts, with rlab's key
// exchange. persist false: ControlMaster=no, every run logs in afresh (as
// bench/facts); true: Ansible's default ssh_args (-C, ControlMaster=auto,
// ControlPersist=60s), the control sockets in the folder given by
// ANSIBLE_SSH_CONTROL_PATH_DIR.
func ansibleCfg(n int, kex, knownHosts string, persist bool) string {
	mux := "-o ControlMaster=no"
	if persist {
		mux = "-C -o ControlMaster=auto -o ControlPersist=60s"
	}
	return fmt.Sprintf(`[defaults]
forks = %d
gathering = explicit
host_key_checking = True
retry_files_enabled = False
[ssh_connection]
pipelining = True
ssh_args = %s -o KexAlgorithms=%s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes
`, n, mux, kex, knownHosts)
}
