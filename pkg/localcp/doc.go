// Package localcp runs the local control plane behind the manager's --local flag: etcd,
// kube-apiserver and kube-controller-manager (garbage-collector and namespace controllers only),
// all on free loopback ports, with their state under one directory (--local-dir):
//
//	<dir>/etcd/                  etcd's data; it persists, so a restart keeps every object
//	<dir>/kubeconfig             admin kubeconfig (system:masters), rewritten atomically on each start
//	<dir>/logs/<component>.log   component output (the previous run's in <component>.log.1)
//	<dir>/run/                   this run's certificates and the controller manager's kubeconfig (removed by Stop)
//	<dir>/localcp.pid            the processes of the running control plane
//	<dir>/localcp.lock           held (flock) while a control plane runs on <dir>
//
// It owns: finding the binaries (bin/, then the version cache that hack/envtest-bins.sh fills),
// starting and stopping the three processes, reaping the processes of a predecessor that was
// killed without stopping them, installing CRDs and waiting until they are established, and
// writing the kubeconfig.
//
// It must not: download or build binaries, touch any directory but <dir> (and envtest's port
// reservations), kill a process whose command line does not name <dir>, print component output
// to the terminal, log credentials, or know anything about dnsplane's own API types or
// controllers (the caller passes the CRDs).
package localcp
