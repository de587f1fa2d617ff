package grpcgo

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Backends is a set of gRPC servers on loopback that answer every method,
// of any service, with an empty message.
type Backends struct {
	servers []*grpc.Server
	addrs   []string
	ports   []uint32
	calls   []atomic.Int64
	wg      sync.WaitGroup
}

// StartBackends starts n gRPC servers on 127.0.0.1, each on a port chosen by
// the kernel. Every unary call is answered with google.protobuf.Empty after
// its request was read as one.
func StartBackends(n int) (*Backends, error) {
	if n < 0 {
		return nil, fmt.Errorf("start backends: negative count %d", n)
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1:0"
	}
	return StartBackendsAt(addrs)
}

// StartBackendsAt starts one backend listening at each address, as
// StartBackends does: the endpoints of a user's own resources, which name
// their addresses (loopback ones, for a real run).
func StartBackendsAt(addrs []string) (*Backends, error) {
	n := len(addrs)
	b := &Backends{calls: make([]atomic.Int64, n)}
	for i := 0; i < n; i++ {
		lis, err := net.Listen("tcp", addrs[i])
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("start backend %d of %d: listen: %w", i, n, err)
		}
		calls := &b.calls[i]
		s := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			var in emptypb.Empty
			if err := stream.RecvMsg(&in); err != nil {
				return err
			}
			calls.Add(1)
			return stream.SendMsg(&emptypb.Empty{})
		}))
		b.servers = append(b.servers, s)
		b.addrs = append(b.addrs, lis.Addr().String())
		b.ports = append(b.ports, uint32(lis.Addr().(*net.TCPAddr).Port))
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			s.Serve(lis)
		}()
	}
	return b, nil
}

// Addrs returns the backends' addresses, "127.0.0.1:PORT".
func (b *Backends) Addrs() []string { return append([]string(nil), b.addrs...) }

// Ports returns the backends' ports, in the order of Addrs.
func (b *Backends) Ports() []uint32 { return append([]uint32(nil), b.ports...) }

// Calls returns how many calls each backend has answered, in the order of
// Addrs.
func (b *Backends) Calls() []int64 {
	out := make([]int64, len(b.calls))
	for i := range b.calls {
		out[i] = b.calls[i].Load()
	}
	return out
}

// Close stops every backend and waits for them.
func (b *Backends) Close() {
	for _, s := range b.servers {
		s.Stop()
	}
	b.wg.Wait()
}
