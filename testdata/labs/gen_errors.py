import os
# Regenerates errors/*.hcl: python3 testdata/labs/gen_errors.py (the corpus files are committed; edit here, rerun).
D=os.path.join(os.path.dirname(os.path.abspath(__file__)),'errors')
os.makedirs(D,exist_ok=True)
LAB='lab "t" {\n  description = "error case"\n}\n'
PAIR=LAB+'''host "a" {
  address = "192.0.2.1"
}
host "b" {
  address = "192.0.2.2"
}
rxe "a" {
  host   = host.a
  netdev = "eth1"
}
rxe "b" {
  host   = host.b
  netdev = "eth1"
}
'''
def W(name, body, pre=PAIR):
    open(os.path.join(D,name+'.hcl'),'w').write(pre+body)
def wl(tool, extra, server='rxe.a', client='rxe.b'):
    return f'''workload "w" {{
  tool   = "{tool}"
  server = {server}
  client = {client}
{extra}}}
'''
W('unknown_attribute','''host "c" {
  address = "192.0.2.3"
  adress  = "192.0.2.3" # ERROR: Unsupported argument
}
''')
W('unknown_block','''hots "c" { # ERROR: Unsupported block type
}
''')
W('port_wrong_type','''host "c" {
  address = "192.0.2.3"
  port    = "ssh" # ERROR: Incorrect attribute value type
}
''')
W('port_out_of_range','''host "c" {
  address = "192.0.2.3"
  port    = 70000 # ERROR: Invalid value for port
}
''')
W('undeclared_host','''rxe "c" {
  host   = host.sever # ERROR: Reference to undeclared host
  netdev = "eth2"
}
''')
W('rxe_where_host_needed','''capture "c" {
  host   = rxe.a # ERROR: Wrong kind of reference
  netdev = "eth1"
}
''')
W('host_where_rxe_needed', wl('ib_write_bw','', server='host.a # ERROR: Wrong kind of reference'))
W('rxe_for_tcp', wl('tcp','', client='rxe.b # ERROR: Wrong kind of reference', server='host.a'))
W('string_reference','''rxe "c" {
  host   = "a" # ERROR: Invalid reference
  netdev = "eth2"
}
''')
W('duplicate_host','''host "a" { # ERROR: Duplicate host "a"
  address = "192.0.2.9"
}
''')
W('duplicate_variable','''variable "u" {
  default = "x"
}
variable "u" { # ERROR: Duplicate variable "u"
  default = "y"
}
''')
W('duplicate_local','''locals {
  x = 1
}
locals {
  x = 2 # ERROR: Duplicate local value "x"
}
''')
W('local_cycle','''locals {
  a = local.b # ERROR: Cycle in local values
  b = local.a
}
''')
W('jump_cycle','''host "c" {
  address = "192.0.2.3"
  jump    = host.d # ERROR: Jump host cycle
}
host "d" {
  address = "192.0.2.4"
  jump    = host.c
}
''')
W('rxe_twice_on_netdev','''rxe "again" {
  host   = host.a
  netdev = "eth1" # ERROR: Duplicate rxe for netdev
}
''')
W('rxe_duplicate_device','''rxe "c" {
  host   = host.a
  netdev = "eth2"
  name   = "rxe_eth1" # ERROR: Duplicate rxe device name
}
''')
W('ud_for_write', wl('ib_write_bw','  transport = "UD" # ERROR: Unsupported transport\n'))
W('uc_for_read', wl('ib_read_lat','  transport = "UC" # ERROR: Unsupported transport\n'))
W('transport_lowercase', wl('ib_send_bw','  transport = "ud" # ERROR: Unsupported transport\n'))
W('transport_pingpong', wl('ibv_rc_pingpong','  transport = "RC" # ERROR: Argument not valid for ibv_rc_pingpong\n'))
W('atomic_size', wl('ib_atomic_bw','  sizes = [8, 64] # ERROR: Invalid size for ib_atomic_bw\n'))
W('ud_pingpong_size', wl('ibv_ud_pingpong','  sizes = ["8KiB"] # ERROR: Invalid size for ibv_ud_pingpong\n'))
W('command_not_exec', wl('ib_write_bw','  command = ["ls"] # ERROR: Argument not valid for ib_write_bw\n'))
W('exec_missing_command','''workload "w" { # ERROR: Missing command
  tool = "exec"
  host = host.a
}
''')
W('exec_with_server','''workload "w" {
  tool    = "exec"
  host    = host.a
  server  = rxe.a # ERROR: Argument not valid for exec
  command = ["ip", "-br", "addr"]
}
''')
W('unknown_tool','''workload "w" {
  tool   = "ib_writ_bw" # ERROR: Unsupported tool
  server = rxe.a
  client = rxe.b
}
''')
# An unknown or missing tool hides none of the block's other errors.
W('unknown_tool_other_errors','''workload "w" {
  tool       = "ib_writ_bw" # ERROR: Unsupported tool
  server     = rxe.a
  client     = rxe.rb # ERROR: Reference to undeclared rxe
  sizes      = [4096, "4kib"] # ERROR: Invalid size
  iterations = 0 # ERROR: Invalid value for iterations
  timeout    = "5 minutes" # ERROR: Invalid duration
}
''')
W('missing_tool_other_errors','''workload "w" { # ERROR: Missing tool
  server = rxe.a
  client = host.bb # ERROR: Reference to undeclared host
  repeat = 0 # ERROR: Invalid value for repeat
}
''')
W('missing_tool','''workload "w" { # ERROR: Missing tool
  server = rxe.a
  client = rxe.b
}
''')
W('missing_client','''workload "w" { # ERROR: Missing client
  tool   = "ib_write_bw"
  server = rxe.a
}
''')
W('size_lowercase_unit', wl('ib_write_bw','  sizes = [4096, "64kib"] # ERROR: Invalid size\n'))
W('size_fraction', wl('ib_write_bw','  sizes = [1.5] # ERROR: Invalid size\n'))
W('size_negative', wl('ib_send_bw','  sizes = -4 # ERROR: Invalid size\n'))
W('duration_no_unit', wl('ib_write_bw','  duration = "30" # ERROR: Invalid duration\n'))
W('duration_number', wl('ib_write_bw','  duration = 30 # ERROR: Invalid duration\n'))
W('timeout_garbage', wl('ib_write_bw','  timeout = "5 minutes" # ERROR: Invalid duration\n'))
W('iterations_and_duration', wl('ib_write_bw','  iterations = 100\n  duration   = "10s" # ERROR: Conflicting iterations and duration\n'))
W('qps_on_latency', wl('ib_write_lat','  qps = 4 # ERROR: Argument not valid for ib_write_lat\n'))
W('bytes_on_rdma', wl('ib_write_bw','  bytes = "1GiB" # ERROR: Argument not valid for ib_write_bw\n'))
W('duration_on_pingpong', wl('ibv_uc_pingpong','  duration = "10s" # ERROR: Argument not valid for ibv_uc_pingpong\n'))
W('repeat_zero', wl('ib_write_bw','  repeat = 0 # ERROR: Invalid value for repeat\n'))
W('unknown_result_attr', wl('ib_write_bw','''  expect {
    condition = result.bandwidth > 1 # ERROR: Unsupported result attribute
  }
'''))
# The older names with units still read their metric, with a warning.
W('deprecated_result_name', wl('ib_write_bw','''  expect {
    condition = result.bw_avg_gbps > 1 # WARNING: Deprecated result name
  }
'''))
W('deprecated_tcp_result_name', '''host "c" {
  address = "192.0.2.3"
}
workload "t" {
  tool   = "tcp"
  server = host.a
  client = host.c
  expect {
    condition = result.tcp_mibps > 100 && result.tcp_bw > 1 # WARNING: Deprecated result name
  }
}
''')
W('latency_attr_on_bw', wl('ib_read_bw','''  expect {
    condition = result.lat_avg < 50 # ERROR: Unsupported result attribute
  }
'''))
W('expect_not_bool', wl('ib_write_bw','''  expect {
    condition = result.bw_avg + 1 # ERROR: Invalid expect condition
    message   = "not a comparison"
  }
'''))
W('expect_missing_condition', wl('ib_write_bw','''  expect { # ERROR: Missing required argument
    message = "no condition"
  }
'''))
W('result_outside_expect', wl('ib_write_bw','  iterations = result.bw_avg # ERROR: Invalid reference to result\n'))
W('undeclared_variable','''host "c" {
  address = var.adress # ERROR: Reference to undeclared input variable
}
''')
W('undeclared_local','''host "c" {
  address = local.nope # ERROR: Reference to undeclared local value
}
''')
W('required_variable','''variable "token" { # ERROR: No value for required variable
  type = string
}
''')
W('variable_validation','''variable "mtu" {
  type    = number
  default = 1400 # ERROR: Invalid value for variable
  validation {
    condition     = contains([1024, 2048, 4096], var.mtu)
    error_message = "RoCE MTU is 1024, 2048 or 4096."
  }
}
''')
W('variable_default_type','''variable "n" {
  type    = number
  default = "many" # ERROR: Invalid value for variable
}
''')
W('each_without_for_each','''host "c" {
  address = each.value # ERROR: Reference to "each" without for_each
}
''')
W('count_and_for_each','''host "c" {
  count    = 2
  for_each = toset(["x"]) # ERROR: Invalid combination of "count" and "for_each"
  address  = "192.0.2.3"
}
''')
W('for_each_number','''host "c" {
  for_each = 3 # ERROR: Invalid for_each argument
  address  = "192.0.2.3"
}
''')
W('for_each_duplicate_key','''host "c" {
  for_each = ["x", "y", "x"] # ERROR: Invalid for_each argument
  address  = "192.0.2.3"
}
''')
W('missing_instance_key','''host "s" {
  for_each = { ana = 10, bo = 11 }
  address  = "192.0.2.${each.value}"
}
rxe "s" {
  host   = host.s # ERROR: Missing instance key
  netdev = "eth1"
}
''')
W('index_unknown_key','''host "s" {
  for_each = { ana = 10, bo = 11 }
  address  = "192.0.2.${each.value}"
}
rxe "s" {
  host   = host.s["cy"] # ERROR: No such instance
  netdev = "eth1"
}
''')
W('missing_address','''host "c" { # ERROR: Missing address
  user = "root"
}
''')
W('vm_and_address','''host "c" {
  address = "192.0.2.3" # ERROR: Conflicting host form
  vm {}
}
''')
W('vm_bad_network','''host "c" {
  vm {
    network "rdma" {
      address = "10.99.0.300/24" # ERROR: Invalid network address
    }
  }
}
''')
W('vm_memory_too_small','''host "c" {
  vm {
    memory = "64MiB" # ERROR: VM memory too small
  }
}
''')
W('bad_netdev','''rxe "c" {
  host   = host.a
  netdev = "eth 2" # ERROR: Invalid netdev name
}
''')
W('during_wrong_kind','''capture "c" {
  host   = host.a
  netdev = "eth1"
  during = [rxe.a] # ERROR: Wrong kind of reference
}
''')
W('during_undeclared','''capture "c" {
  host   = host.a
  netdev = "eth1"
  during = [workload.write] # ERROR: Reference to undeclared workload
}
''')
W('filter_unbalanced','''capture "c" {
  host   = host.a
  netdev = "eth1"
  filter = "udp and (port 4791" # ERROR: Invalid capture filter
}
''')
W('filter_shell','''capture "c" {
  host   = host.a
  netdev = "eth1"
  filter = "udp; rm -rf /" # ERROR: Invalid capture filter
}
''')
W('snaplen_too_small','''capture "c" {
  host    = host.a
  netdev  = "eth1"
  snaplen = 10 # ERROR: Invalid value for snaplen
}
''')
W('missing_lab','''# ERROR: Missing lab block
host "c" {
  address = "192.0.2.3"
}
''', pre='')
W('duplicate_lab','''lab "again" { # ERROR: Duplicate lab block
}
''')
W('unclosed_block','''host "c" { # ERROR: Unclosed configuration block
  address = "192.0.2.3"
''')
W('missing_equals','''host "c" {
  address "192.0.2.3" # ERROR: Invalid block definition
}
''')
W('attribute_redefined','''host "c" {
  address = "192.0.2.3"
  address = "192.0.2.4" # ERROR: Attribute redefined
}
''')
W('invalid_name','''host "2fast" { # ERROR: Invalid host name
  address = "192.0.2.3"
}
''')
W('unknown_function','''host "c" {
  address = upper2("x") # ERROR: Call to unknown function
}
''')
W('file_missing','''locals {
  hosts = jsondecode(file("no-such-terraform-output.json")) # ERROR: Error in function call
}
''')
W('slug_conflict','''host "s" { # ERROR: Conflicting host names
  for_each = toset(["a b", "a_b"])
  address  = "192.0.2.3"
}
''')
W('capture_reference','''workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["echo", capture.c.name] # ERROR: Reference to undeclared capture
}
''')
W('empty_jump','''host "c" {
  address = "192.0.2.3"
  jump    = "" # ERROR: Empty jump
}
''')
W('args_on_exec','''workload "w" {
  tool    = "exec"
  host    = host.a
  command = ["true"]
  args    = ["-x"] # ERROR: Argument not valid for exec
}
''')
W('count_index_out_of_count','''host "c" {
  address = "192.0.2.${count.index}" # ERROR: Reference to "count" without count
}
''')
W('null_value','''host "c" {
  address = null # ERROR: Missing address
}
''')
# Null leaves an optional argument unset (valid/null_unset.hcl); a required
# one set to null is missing, and count or for_each cannot be null.
W('null_required','''rxe "c" {
  host   = host.a
  netdev = null # ERROR: Missing required argument
}
workload "w" { # ERROR: Missing tool
  tool   = null
  server = rxe.a
  client = rxe.b
}
workload "x" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.b
  expect {
    condition = null # ERROR: Missing required argument
  }
}
host "d" {
  count   = null # ERROR: Null value for count
  address = "192.0.2.4"
}
''')
W('capture_small_max', '''capture "c" {
  host     = host.a
  netdev   = "eth1"
  max_size = "100KiB" # ERROR: Capture size too small
}
''')
W('multiple_errors_at_once', '''host "c" {
  address = "192.0.2.3"
  port    = 0 # ERROR: Invalid value for port
}
workload "w" {
  tool   = "ib_write_bw"
  server = rxe.a
  client = rxe.zz # ERROR: Reference to undeclared rxe
  sizes  = ["1 GiB"] # ERROR: Invalid size
}
''')
W('misspelt_host','''host "server" {
  address = "192.0.2.3"
}
capture "c" {
  host   = host.sever # ERROR: Reference to undeclared host
  netdev = "eth1"
}
''')
W('misspelt_instance_key','''host "s" {
  for_each = { ana = 10, bo = 11 }
  address  = "192.0.2.${each.value}"
}
rxe "s" {
  host   = host.s["ama"] # ERROR: No such instance
  netdev = "eth1"
}
''')
W('count_index_out_of_range','''host "h" {
  count   = 2
  address = "192.0.2.${count.index + 1}"
}
workload "w" {
  tool    = "exec"
  host    = host.h[2] # ERROR: No such instance
  command = ["true"]
}
''')
W('key_on_single_block','''capture "c" {
  host   = host.a["x"] # ERROR: Unexpected instance key
  netdev = "eth1"
}
''')
W('unknown_root','''capture "c" {
  host   = hosts.a # ERROR: Unknown variable
  netdev = "eth1"
}
''')
W('host_refers_to_rxe','''host "c" {
  address = rxe.a.netdev # ERROR: Invalid reference to rxe
}
''')
W('validation_refers_elsewhere','''variable "x" {
  default = "a"
  validation {
    condition     = var.x != local.y # ERROR: Invalid reference in variable validation
    error_message = "x must differ from y."
  }
}
locals {
  y = "b"
}
''')
W('address_with_user','''host "c" {
  address = "root@192.0.2.3" # ERROR: Invalid address
}
''')
W('address_with_port','''host "c" {
  address = "192.0.2.3:2222" # ERROR: Invalid address
}
''')
W('address_with_space','''host "c" {
  address = "192.0.2.3 -oProxyCommand=x" # ERROR: Invalid address
}
''')
W('ud_send_too_big', wl('ib_send_bw','  transport = "UD"\n  sizes     = [1024, "64KiB"] # ERROR: Invalid size for ib_send_bw\n'))
W('vm_duplicate_address','''host "c" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
host "d" { # ERROR: Duplicate VM network address
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
''')
W('vm_three_on_network','''host "c" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
host "d" {
  vm {
    network "rdma" {
      address = "10.99.0.2/24"
    }
  }
}
host "e" { # ERROR: Too many VMs on one network
  vm {
    network "rdma" {
      address = "10.99.0.3/24"
    }
  }
}
''')
W('vm_netdev_missing','''host "c" {
  vm {
    network "rdma" {
      address = "10.99.0.1/24"
    }
  }
}
rxe "c" {
  host   = host.c
  netdev = "eth2" # WARNING: Netdev not on VM
}
''')
W('two_syntax_errors','''host "c" {
  address "192.0.2.3" # ERROR: Invalid block definition
}
host "d" {
  address = "192.0.2.4 # ERROR: Invalid multi-line string
}
host "e" {
  port = 22 +
}
''')
W('non_root_without_become','''host "c" {
  address = "192.0.2.3"
  user    = "student"
}
rxe "c" {
  host   = host.c # WARNING: Root needed without become
  netdev = "eth1"
}
capture "c" {
  host   = host.c
  netdev = "eth1"
}
''')
W('instances_same_error','''host "s" {
  for_each = toset(["ana", "bo", "cy"])
  address  = "192.0.2.1"
  port     = 0 # ERROR: Invalid value for port
}
''')
W('unused_host','''host "spare" { # WARNING: Unused host
  address = "192.0.2.9"
}
''', pre=LAB)
W('address_option_word','''host "c" {
  address = "restrict" # ERROR: Invalid address
}
host "d" {
  address = "No-PTY" # ERROR: Invalid address
}
''')
W('jump_not_a_host','''host "c" {
  address = "192.0.2.3"
  jump    = "restrict" # ERROR: Invalid jump
}
host "d" {
  address = "192.0.2.4"
  jump    = "u@bastion.example.org:22,u@cert-authority" # ERROR: Invalid jump
}
host "e" {
  address = "192.0.2.5"
  jump    = "u@192.0.2.9 -oProxyCommand=x" # ERROR: Invalid jump
}
host "f" {
  address = "192.0.2.6"
  jump    = "u@bastion.example.org:99999" # ERROR: Invalid jump
}
host "g" {
  address = "192.0.2.7"
  jump    = "@bastion.example.org" # ERROR: Invalid jump
}
host "h" {
  address = "192.0.2.8"
  jump    = "u@[2001:db8::1]:22,ops@bastion.example.org"
}
''')
# binary garbage, non-UTF-8, deep nesting
open(os.path.join(D,'binary_garbage.hcl'),'wb').write(bytes([0x7f,0x45,0x4c,0x46,0x02,0x01,0x01,0x00,0x00,0x00,0xff,0xfe,0x10,0x20])+b' # ERROR: Lab file is not text\n'+bytes(range(1,10))+b'\n')
open(os.path.join(D,'not_utf8.hcl'),'wb').write(PAIR.encode()+b'host "caf\xe9" { # ERROR: Invalid UTF-8\n  address = "192.0.2.3"\n}\n')
open(os.path.join(D,'deep_nesting.hcl'),'w').write(LAB+'locals {\n  x = '+'['*200+']'*200+' # ERROR: Nesting too deep\n}\n')
