// Package rawsock reads and writes a socket with raw system calls, so that
// the service's calls leave the Go runtime's monitor asleep.
//
// The runtime's monitor (sysmon) polls every 20 µs while any P runs, and
// doubles its sleep only after 50 quiet rounds. When every P is idle it
// sleeps until a goroutine enters a system call, and a wake by a system
// call restarts it at 20 µs. A service that waits for Redis and for its
// callers between nearly every call (sharedstore under load) thus keeps it
// polling: on the peers benchmark the monitor was half of the service's
// context switches and 12–16 % of its CPU per decision.
//
// Entering a system call exists so that a call that blocks can hand its P
// to another thread. A read or write of a non-blocking socket never blocks
// (it returns EAGAIN, and the connection then waits for readiness through
// the runtime's poller, as net.Conn does), so it needs none of that, and
// made as a raw system call it does not wake the monitor. Conn does exactly
// this for Read and Write and leaves everything else (deadlines, Close, the
// addresses) to the connection it wraps; NewClient is a go-redis client whose
// connections are Conns.
//
// go-redis checks each connection it takes from its pool with a peek of its
// own (through SyscallConn), a system call per pipeline; Conn answers that
// check without a system call for a connection that read or wrote within
// the last RecentUse, and runs it for any other.
//
// The cost: with the monitor asleep, a goroutine that runs long without a
// system call is preempted at the next timer rather than within 10 ms. A
// call the service serves runs for microseconds and sets a deadline (a
// timer); the rest of the service makes ordinary system calls, which wake
// the monitor as before.
//
// On systems other than Linux, Wrap returns the connection as it is.
package rawsock
