// Package harness runs the processes of dnsplane's harnesses — the e2e suite's `manager --local`
// processes (e2e/), hack/bench's controllers, and the manager command's own tests
// (internal/app) — and checks what they leave behind:
//   - Process is a child process with its output in a log: Start, WaitReady (an HTTP endpoint
//     answering 200, failing at once when the process exits), Stop (SIGTERM, then SIGKILL after
//     a grace period) and Kill (SIGKILL, as an OOM kill would);
//   - ProcessesNaming lists the live processes whose command line names a directory, as a
//     harness's teardown checks that nothing it started outlived it;
//   - ReapPIDFile ends the control plane that a SIGKILLed `manager --local` left running, by the
//     PIDs pkg/localcp records.
//
// It is for tests and test tools only: no product code imports it. It starts no server of its
// own (internal/testing has those), reads /proc (Linux only), and holds no package-level state.
package harness
