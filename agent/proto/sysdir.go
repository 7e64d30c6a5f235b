package proto

// SystemAgentDir is where an admin installs a root-owned copy of the agent
// for become, one folder per build: SystemAgentDir/<sha256>/rlab-agent
// (`rlab agent export` prints the commands). The sudoers rule names that
// file, never the copy in the login user's cache, which the user can
// rewrite between sudo's digest check and its exec (SECURITY 176); the
// controller starts it when it is there, and a root agent working for a
// user refuses to run from anywhere someone else can write.
const SystemAgentDir = "/usr/local/libexec/rlab/agent"

// SystemAgentPath is the root-owned agent of the build with this sha256.
func SystemAgentPath(hash string) string {
	return SystemAgentDir + "/" + hash + "/rlab-agent"
}
