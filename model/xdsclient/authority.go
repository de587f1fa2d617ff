package xdsclient

import (
	"fmt"
	"slices"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/grpc/codes"
)

// authority holds the resource cache, the watchers and the fallback state of
// one bootstrap authority (grpc-go internal/xds/clients/xdsclient/authority.go).
type authority struct {
	c    *Client
	name string
	// servers are channel indices in priority order (gRFC A71: "Priority is
	// assigned based on server order in bootstrap.json").
	servers []int
	// held is the set of positions in servers whose channel this authority
	// holds a reference to (grpc-go xdsChannelConfigs[i].channel != nil).
	held uint64
	// active is the position of the active channel, -1 when none (grpc-go
	// activeXDSChannel).
	active int

	// entries are the cache entries, type 0's first, then type 1's, and
	// so on, each type's sorted by name; counts[t] says how many are of
	// type t (see of). One slice of pairs rather than maps, a slice per
	// type, or a slice of names beside one of states: an XdsClient holds a
	// few entries per type, and a fleet holds a million XdsClients.
	entries []cacheEntry
	counts  [numTypes]int32
}

// cacheEntry is one name of an authority's cache and its state.
type cacheEntry struct {
	name string
	st   *resourceState
}

// of returns the cache entries of type t, sorted by name.
func (a *authority) of(t ResourceType) []cacheEntry {
	start := a.start(t)
	return a.entries[start : start+int(a.counts[t])]
}

// start returns where the entries of type t start in a.entries.
func (a *authority) start(t ResourceType) int {
	start := 0
	for u := range t {
		start += int(a.counts[u])
	}
	return start
}

// find returns the position of name among the entries of typ, and
// whether it is there.
func (a *authority) find(typ ResourceType, name string) (int, bool) {
	return slices.BinarySearchFunc(a.of(typ), name, func(e cacheEntry, name string) int {
		return strings.Compare(e.name, name)
	})
}

// state returns the cache entry of (typ, name), or nil.
func (a *authority) state(typ ResourceType, name string) *resourceState {
	if i, ok := a.find(typ, name); ok {
		return a.of(typ)[i].st
	}
	return nil
}

// resourceState is one cache entry (grpc-go authority.go resourceState).
type resourceState struct {
	watchers []WatcherID // registration order
	cache    *Decoded    // last valid resource, nil if none
	version  string      // version_info of the last update (CSDS)
	// updated is the time of the last ACKed update (CSDS last_updated),
	// which hasUpdate says the entry still reports. A NACK or a server
	// error leaves it; a deletion or a timer that takes the resource away
	// forgets it in every client (grpc-go authority.go resets
	// UpdateMetadata; grpc-java's DOES_NOT_EXIST ResourceMetadata has no
	// update time and CsdsService writes last_updated only with a
	// resource; C-core ResourceState::FillGenericXdsConfig likewise).
	updated time.Duration
	// errs holds the errors, nil until the resource has one.
	errs *resourceErrs
	// subs is the set of server positions this name is subscribed on
	// (grpc-go resourceState.xdsChannelConfigs).
	subs uint64
	// seen is the response generation that last named this resource
	// (Client.gen): it is compared only with the current generation, and
	// would be mistaken for it only if a cached resource went unnamed by
	// 2³²−1 responses of the client in a row, when the generation wraps.
	seen uint32
	// The small fields last, together: a client holds one entry per
	// resource it watches, and padding between them would cost each
	// (80 bytes in all).
	stat      uint8 // an adminpb.ClientResourceStatus (see status)
	hasUpdate bool
	// deletionIgnored is set when a deletion was ignored (gRFC A53).
	deletionIgnored bool
	typ             ResourceType
}

// status returns the entry's CSDS status.
func (st *resourceState) status() adminpb.ClientResourceStatus {
	return adminpb.ClientResourceStatus(st.stat)
}

// resourceErrs is the part of a resourceState that only a resource that
// had an error needs.
type resourceErrs struct {
	err *errState // last error, nil if none (CSDS error_state)
	// lastErr is the last error the watchers were told, NACK or
	// connectivity, which a new watcher hears (Profile.ReplayLastError);
	// shared and never modified.
	lastErr *errState
}

// err returns the entry's last error, nil if none.
func (st *resourceState) err() *errState {
	if st.errs == nil {
		return nil
	}
	return st.errs.err
}

// lastErr returns the last error the watchers were told, nil if none.
func (st *resourceState) lastErr() *errState {
	if st.errs == nil {
		return nil
	}
	return st.errs.lastErr
}

// setErr sets the entry's last error; nil clears it.
func (st *resourceState) setErr(e *errState) {
	if errs := st.errsFor(e); errs != nil {
		errs.err = e
	}
}

// setLastErr sets the last error the watchers were told; nil clears it.
func (st *resourceState) setLastErr(e *errState) {
	if errs := st.errsFor(e); errs != nil {
		errs.lastErr = e
	}
}

// errsFor returns the entry's error part for setting e, allocated at its
// first error; nil when e is nil and there is none (nothing to clear).
func (st *resourceState) errsFor(e *errState) *resourceErrs {
	if st.errs == nil && e != nil {
		st.errs = &resourceErrs{}
	}
	return st.errs
}

// errState is CSDS UpdateFailureState plus the notification it produced.
type errState struct {
	status  Status
	cause   ErrorCause
	version string
	at      time.Duration
}

func (c *Client) newAuthority(name string, servers []ServerConfig) authority {
	a := authority{c: c, name: name, active: -1}
	if len(c.auths) == 0 {
		a.servers, a.entries = c.b.authSrv[:0], c.b.entries[:0]
	}
	for _, s := range servers {
		a.servers = append(a.servers, c.serverIndex(s))
	}
	return a
}

func (a *authority) position(ch int) int {
	for i, s := range a.servers {
		if s == ch {
			return i
		}
	}
	return -1
}

func (a *authority) empty() bool { return len(a.entries) == 0 }

// watch adds a watcher (grpc-go authority.go watchResource).
func (a *authority) watch(typ ResourceType, name string, w WatcherID) {
	c := a.c
	// The first watch of the authority creates a channel to server[0]
	// (grpc-go xdsChannelToUse; gRFC A71).
	if a.active < 0 {
		a.acquire(0)
		a.active = 0
	}
	st := a.state(typ, name)
	created := st == nil
	if created {
		st = a.c.b.newState()
		st.stat, st.typ = uint8(adminpb.ClientResourceStatus_REQUESTED), typ
		c.entryAdded(st)
		i, _ := a.find(typ, name)
		a.entries = slices.Insert(a.entries, a.start(typ)+i, cacheEntry{name, st})
		a.counts[typ]++
	}
	for _, x := range st.watchers {
		if x == w {
			return // a watcher is a set member (grpc-go map[ResourceWatcher]bool)
		}
	}
	st.watchers = append(st.watchers, w)
	if created {
		a.watchTimeFallback()
		a.subscribeNew(st, typ, name)
	}
	a.replay(typ, name, st, w)
}

// subscribeNew subscribes a name just watched, where the clients differ
// during fallback: on the active channel only (grpc-go xdsChannelToUse), on
// every channel of the authority at once (C-core WatchResource), or on
// the active channel at once and on the others with their next request
// (grpc-java: every request carries getSubscribedResources, which holds
// each resource of the authority).
func (a *authority) subscribeNew(st *resourceState, typ ResourceType, name string) {
	mode := a.c.prof.NewWatchChannels
	for pos := range a.servers {
		switch {
		case a.held&(1<<pos) == 0 || st.subs&(1<<pos) != 0:
		case pos == a.active || mode == WatchChannelsAll:
			a.subscribe(st, pos, typ, name)
		case mode == WatchChannelsAuthority:
			st.subs |= 1 << pos
			a.c.channel(a.servers[pos]).subscribeLater(a.c, typ, name)
		}
	}
}

// watchTimeFallback falls back for a new uncached watch when the active
// channel is failing (Profile.WatchTimeFallback). grpc-java activates the
// next server that is not in error and asks it for everything
// (XdsClientImpl.manageControlPlaneClient, getOrCreateControlPlaneClient,
// addCpcToAuthority). C-core adds channels until one is not failing
// (XdsClient::WatchResource) and subscribes the new name on each
// (subscribeNew); a channel without an ADS call then starts one, and the
// AdsCall constructor subscribes every watched resource of every
// authority that lists the channel (XdsChannel::SubscribeLocked), while a
// channel whose call already runs for another authority gets only the new
// name.
func (a *authority) watchTimeFallback() {
	c := a.c
	mode := c.prof.WatchTimeFallback
	if mode == WatchFallbackNone || a.active < 0 || c.channel(a.servers[a.active]).connErr() == nil {
		return
	}
	for pos := a.active + 1; pos < len(a.servers); pos++ {
		if a.held&(1<<pos) != 0 {
			continue
		}
		ch := c.channel(a.servers[pos])
		if mode == WatchFallbackNewCall && ch.refs > 0 && (ch.phase == streamOpen || ch.phase == streamOpening) {
			a.acquire(pos)
			a.active = pos
		} else {
			a.fallbackTo(pos)
		}
		if ch.connErr() == nil {
			return
		}
	}
}

// replay tells a new watcher what the cache knows (grpc-go authority.go
// watchResource: cache, then the NACK error, then NotExist). Connectivity
// errors are replayed only by C-core.
func (a *authority) replay(typ ResourceType, name string, st *resourceState, w WatcherID) {
	c := a.c
	if st.cache != nil {
		c.notify(w, ResourceChanged, typ, name, st.cache, st.version, Status{}, CauseNone)
	}
	switch {
	case c.prof.ReplayLastError:
		// grpc-java ResourceSubscriber.addWatcher.
		switch {
		case st.lastErr() != nil:
			a.notifyErr(w, typ, name, st, st.lastErr().status, st.lastErr().cause)
		case st.cache == nil && (st.status() == adminpb.ClientResourceStatus_DOES_NOT_EXIST || st.status() == adminpb.ClientResourceStatus_TIMEOUT):
			a.notifyErr(w, typ, name, st, notFound(typ, name), CauseDeleted)
		}
	default:
		a.replayStatus(typ, name, st, w)
	}
	if c.prof.ReplayConnectivityError && a.active >= 0 {
		if ce := c.channel(a.servers[a.active]).connErr(); ce != nil {
			a.notifyErr(w, typ, name, st, connectivityStatus(*ce), CauseConnectivity)
		}
	}
}

// replayStatus replays the error the resource's status records: a data
// error, or NotExist (grpc-go authority.go watchResource; C-core
// XdsClient::WatchResource).
func (a *authority) replayStatus(typ ResourceType, name string, st *resourceState, w WatcherID) {
	switch st.status() {
	case adminpb.ClientResourceStatus_NACKED, adminpb.ClientResourceStatus_RECEIVED_ERROR, adminpb.ClientResourceStatus_TIMEOUT:
		if st.err() != nil {
			a.notifyErr(w, typ, name, st, st.err().status, st.err().cause)
		}
	case adminpb.ClientResourceStatus_DOES_NOT_EXIST:
		a.notifyErr(w, typ, name, st, notFound(typ, name), CauseDeleted)
	}
}

// notifyErr sends ResourceChanged(error) when nothing is cached and
// AmbientError otherwise (gRFC A88 "Handling Transient Errors" and the
// non-dropping rows of "Summary of Behavior Changes").
func (a *authority) notifyErr(w WatcherID, typ ResourceType, name string, st *resourceState, s Status, cause ErrorCause) {
	k := AmbientError
	if st.cache == nil {
		k = ResourceChanged
	}
	a.c.notify(w, k, typ, name, nil, "", s, cause)
}

func (a *authority) notifyAllErr(typ ResourceType, name string, st *resourceState, s Status, cause ErrorCause) {
	for _, w := range st.watchers {
		a.notifyErr(w, typ, name, st, s, cause)
	}
}

// unwatch removes a watcher; the last one unsubscribes the name from every
// channel, and the last name of the authority releases its channels
// (grpc-go unwatchResource, removeUnsubscribedCacheEntries, closeXDSChannels).
func (a *authority) unwatch(typ ResourceType, name string, w WatcherID) {
	st := a.state(typ, name)
	if st == nil {
		return
	}
	for i, x := range st.watchers {
		if x == w {
			st.watchers = append(st.watchers[:i], st.watchers[i+1:]...)
			break
		}
	}
	if len(st.watchers) > 0 {
		return
	}
	for pos := range a.servers {
		if st.subs&(1<<pos) != 0 {
			a.c.channel(a.servers[pos]).unsubscribe(a.c, typ, name)
		}
	}
	a.c.entryRemoved(st)
	i, _ := a.find(typ, name)
	at := a.start(typ) + i
	a.entries = slices.Delete(a.entries, at, at+1)
	a.c.b.freeState(st)
	a.counts[typ]--
	if a.empty() {
		for pos := range a.servers {
			if a.held&(1<<pos) != 0 {
				a.release(pos)
			}
		}
		a.active = -1
	}
}

func (a *authority) subscribe(st *resourceState, pos int, typ ResourceType, name string) {
	st.subs |= 1 << pos
	a.c.channel(a.servers[pos]).subscribe(a.c, typ, name)
}

// acquire takes a reference to the channel at pos, creating it.
func (a *authority) acquire(pos int) {
	a.held |= 1 << pos
	ch := a.c.channel(a.servers[pos])
	ch.acquire(a.c, a)
}

// release drops the reference to the channel at pos.
func (a *authority) release(pos int) {
	a.held &^= 1 << pos
	ch := a.c.channel(a.servers[pos])
	ch.release(a.c, a)
}

// connectivityFailure handles a connectivity error on the channel at pos:
// an ADS stream that failed before any response, or (C-core, spec)
// TRANSIENT_FAILURE. It falls back if a watched resource is uncached, else
// tells every watcher (grpc-go authority.go handleADSStreamFailure; gRFC A71
// "Change XdsClient to support fallback within each xDS authority"; gRFC A57
// "Handling ADS Stream Termination").
func (a *authority) connectivityFailure(pos int, st Status) {
	if a.watcherExistsForUncachedResource() {
		for i := pos + 1; i < len(a.servers); i++ {
			if a.fallbackTo(i) {
				// Fallback started: watchers are not told (grpc-go returns
				// early; TestAuthority_Fallback sees no ResourceError).
				// grpc-java's handleStreamClosed tells (and sets lastError
				// of) the subscribers with a result it visits before the
				// first uncached one starts fallback, in the order of its
				// HashMap of types, which no model can reproduce; every
				// profile here follows grpc-go and tells none.
				return
			}
		}
	}
	// No fallback: every watcher of the authority gets the error, uncached
	// ones as ResourceChanged, cached ones as AmbientError (gRFC A88 table
	// rows 1-4). Not de-duplicated (grpc-go authority.go
	// propagateConnectivityErrorToAllWatchers).
	s := connectivityStatus(st)
	var last *errState
	if a.c.prof.ReplayLastError {
		// grpc-java handleStreamClosed: subscriber.onError sets lastError.
		last = &errState{status: s, cause: CauseConnectivity, at: a.c.now}
	}
	for t := ResourceType(0); t < numTypes; t++ {
		for _, e := range a.of(t) {
			if last != nil {
				e.st.setLastErr(last)
			}
			a.notifyAllErr(t, e.name, e.st, s, CauseConnectivity)
		}
	}
}

// watcherExistsForUncachedResource: "At least one watcher exists for a
// resource that is not cached" (gRFC A71); NACKed and does-not-exist entries
// count as cached (grpc-go checks status == Requested).
func (a *authority) watcherExistsForUncachedResource() bool {
	for _, e := range a.entries {
		if st := e.st; len(st.watchers) > 0 && st.status() == adminpb.ClientResourceStatus_REQUESTED {
			return true
		}
	}
	return false
}

// fallbackTo connects to the server at pos and subscribes every watched
// name there, keeping the cache and the higher-priority channels (gRFC A71;
// grpc-go fallbackToServer, which skips a server whose channel exists).
func (a *authority) fallbackTo(pos int) bool {
	if a.held&(1<<pos) != 0 {
		return false
	}
	a.acquire(pos)
	a.active = pos
	for t := ResourceType(0); t < numTypes; t++ {
		for _, e := range a.of(t) {
			st, name := e.st, e.name
			if len(st.watchers) > 0 && st.subs&(1<<pos) == 0 {
				a.subscribe(st, pos, t, name)
			}
		}
	}
	return true
}

// revertOnUpdate applies gRFC A71 "Once such a resource is received, the
// XdsClient will close connections to the lower-priority server(s)"
// (grpc-go handleRevertingToPrimaryOnUpdate). It reports whether the update
// is to be processed: updates from a server of lower priority than the
// active one are dropped.
func (a *authority) revertOnUpdate(pos int) bool {
	if a.active < 0 || pos > a.active {
		return false
	}
	if pos == a.active {
		return true
	}
	a.active = pos
	for i := pos + 1; i < len(a.servers); i++ {
		if a.held&(1<<i) == 0 {
			continue
		}
		ch := a.c.channel(a.servers[i])
		for t := ResourceType(0); t < numTypes; t++ {
			for _, e := range a.of(t) {
				st, name := e.st, e.name
				if st.subs&(1<<i) != 0 {
					st.subs &^= 1 << i
					ch.unsubscribe(a.c, t, name)
				}
			}
		}
		a.release(i)
	}
	return true
}

// handleUpdate applies one response of type typ from the channel at pos to
// the cache (grpc-go handleADSResourceUpdate; gRFC A88 "Handling Data
// Errors" and xRFC TP3 support).
func (a *authority) handleUpdate(pos int, typ ResourceType, resp *DecodedResponse, hadConnErr bool) {
	c := a.c
	if !a.revertOnUpdate(pos) {
		return
	}
	feat := c.servers[a.servers[pos]].cfg.Features
	a88 := c.prof.A88DataErrors
	fs := c.filters
	for _, d := range resp.Resources {
		if d.Name == "" {
			continue // a top-level error: only the NACK carries it
		}
		st := a.state(typ, d.Name)
		if st == nil {
			continue
		}
		st.seen = c.gen
		if err := d.ErrIn(fs); err != nil {
			// grpc-go reports ResourceUpdateInvalid per resource it has
			// state for (gRFC A78 resource_updates_invalid).
			c.countUpdate(a.servers[pos], typ, false)
			a.handleNACK(typ, d.Name, err, st, resp.Version, feat)
			continue
		}
		// gRFC A78 resource_updates_valid: "incremented even for resources
		// that have not changed" (grpc-go ResourceUpdateValid).
		c.countUpdate(a.servers[pos], typ, true)
		// A valid resource. Watchers hear of it when it is new, differs
		// from the cache, or follows an error (grpc-go: "the previous update
		// for this resource was NACKed").
		// A deletion recorded as an error (C-core) does not count: C-core
		// tells watchers only of a resource that differs.
		st.deletionIgnored = false
		e := st.err()
		changed := st.cache == nil || !st.cache.Equal(d) || (e != nil && e.cause != CauseDeleted)
		c.setStatus(st, adminpb.ClientResourceStatus_ACKED)
		st.version = resp.Version
		st.updated, st.hasUpdate = c.now, true
		st.setErr(nil)
		st.setLastErr(nil) // grpc-java onData, changed or not
		if changed {
			c.setCache(st, d)
			for _, w := range st.watchers {
				c.notify(w, ResourceChanged, typ, d.Name, d, resp.Version, Status{}, CauseNone)
			}
		} else if hadConnErr && c.prof.AmbientOKOnRecovery {
			// C-core: an unchanged resource while the channel status was
			// an error clears it with AmbientError(OK) (xds_client.cc
			// AdsCall::ParseResource).
			for _, w := range st.watchers {
				c.notify(w, AmbientError, typ, d.Name, nil, "", Status{}, CauseRecovered)
			}
		}
	}
	if a88 && c.prof.TP3ResourceErrors {
		for _, re := range resp.ResourceErrors {
			if st := a.state(typ, re.Name); st != nil {
				st.seen = c.gen
				// C-core HandleServerReportedResourceError counts a TP3
				// error as an invalid resource.
				c.countUpdate(a.servers[pos], typ, false)
				a.handleServerError(typ, re, st, resp.Version, feat)
			}
		}
	}
	if !typ.allResourcesRequiredInSotW() {
		return
	}
	// SotW deletion of LDS/CDS: a cached name missing from the response
	// (grpc-go handleADSResourceUpdate, second loop). A resource kept
	// after a deletion is deleted again by every response without it in
	// C-core (the AdsCall loop checks only HasResource) and grpc-java
	// (onAbsent checks only data != null), and its watchers are told
	// each time.
	repeat := c.prof.IgnoredDeletion != DeletionSilent
	for _, e := range a.of(typ) {
		st, name := e.st, e.name
		if st.cache == nil || st.seen == c.gen || (st.status() == adminpb.ClientResourceStatus_DOES_NOT_EXIST && !repeat) {
			// Uncached: the timer decides (grpc-go PR #5912). Kept
			// after a deletion: told again only where the client does.
			continue
		}
		a.handleDeletion(typ, name, st, resp.Version, feat)
	}
}

// handleNACK applies a resource that failed validation.
func (a *authority) handleNACK(typ ResourceType, name string, err *ValidationError, st *resourceState, version string, feat ServerFeatures) {
	c := a.c
	s := Status{Code: codes.InvalidArgument, Message: fmt.Sprintf("xds: resource %q of type %v NACKed: %v", name, typ, err)}
	// grpc-go c841c90b (#9185): the same error text again is not re-sent.
	e := st.err()
	dup := c.prof.SuppressDuplicateNACKError && e != nil && e.cause == CauseNACK && e.status == s
	c.setStatus(st, adminpb.ClientResourceStatus_NACKED)
	st.setErr(&errState{status: s, cause: CauseNACK, version: version, at: c.now})
	st.setLastErr(st.err()) // grpc-java onError
	if c.prof.A88DataErrors && feat.FailOnDataErrors && st.cache != nil {
		// gRFC A88 table "NACK from client | true | true": drop the
		// resource and fail RPCs.
		c.setCache(st, nil)
	}
	if dup {
		return
	}
	a.notifyAllErr(typ, name, st, s, CauseNACK)
}

// handleServerError applies an xRFC TP3 resource error (gRFC A88 "Support
// for Errors Provided by the xDS server"). NOT_FOUND and PERMISSION_DENIED
// are data errors; every other code is transient.
func (a *authority) handleServerError(typ ResourceType, re ResourceError, st *resourceState, version string, feat ServerFeatures) {
	c := a.c
	data := re.Status.Code == codes.NotFound || re.Status.Code == codes.PermissionDenied
	if data && feat.FailOnDataErrors {
		c.setCache(st, nil)
	}
	c.setStatus(st, adminpb.ClientResourceStatus_RECEIVED_ERROR)
	st.setErr(&errState{status: re.Status, cause: CauseServerError, version: version, at: c.now})
	// No shipping client both reads resource_errors (C-core) and replays
	// the last error (grpc-java, which never reads them); a profile that
	// sets both replays this error as the last one its watchers were told.
	st.setLastErr(st.err())
	a.notifyAllErr(typ, re.Name, st, re.Status, CauseServerError)
}

// handleDeletion applies the SotW deletion of a cached LDS/CDS resource by
// the response of the given version.
func (a *authority) handleDeletion(typ ResourceType, name string, st *resourceState, version string, feat ServerFeatures) {
	c := a.c
	s := notFound(typ, name)
	if c.prof.IgnoredDeletion == DeletionAmbientDNE {
		// C-core: every LDS/CDS deletion goes through
		// ResourceState::SetDoesNotExistOnLdsOrCdsDeletion, which records
		// it as the entry's error_state ("does not exist", the response's
		// version and time), whether the resource is dropped or kept.
		st.setErr(&errState{status: s, cause: CauseDeleted, version: version, at: c.now})
	}
	if c.prof.A88DataErrors {
		// gRFC A88 table, "LDS or CDS resource deletion from server":
		// without fail_on_data_errors, OnAmbientError(NOT_FOUND) and keep
		// the resource (C-core keeps it cached with DOES_NOT_EXIST status);
		// with it, drop the resource and OnResourceChanged(NOT_FOUND).
		if feat.FailOnDataErrors {
			c.setStatus(st, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
			a.forget(st)
		} else {
			st.deletionIgnored = true
			if c.prof.IgnoredDeletion != DeletionAmbient {
				// grpc-java's onAbsent leaves the metadata ACKED.
				c.setStatus(st, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
			}
		}
		a.notifyAllErr(typ, name, st, s, CauseDeleted)
		return
	}
	if feat.IgnoreResourceDeletion {
		// gRFC A53: keep the resource. grpc-go only logs; grpc-java
		// (onAbsent) tells the watchers with AmbientError(NOT_FOUND) and
		// keeps ACKED; C-core also marks it DOES_NOT_EXIST. Both tell
		// them again on every response that leaves it out. The resource's
		// version and last_updated stay those of its ACK.
		st.deletionIgnored = true
		switch c.prof.IgnoredDeletion {
		case DeletionAmbient:
			a.notifyAllErr(typ, name, st, Status{Code: codes.NotFound, Message: fmt.Sprintf("Resource %s deleted from server", name)}, CauseDeleted)
		case DeletionAmbientDNE:
			c.setStatus(st, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
			a.notifyAllErr(typ, name, st, s, CauseDeleted)
		}
		return
	}
	a.forget(st)
	if c.prof.IgnoredDeletion != DeletionAmbientDNE {
		st.setErr(nil)
	}
	c.setStatus(st, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
	a.notifyAllErr(typ, name, st, s, CauseDeleted)
}

// forget drops the entry's resource, and with it the version and the
// last_updated CSDS reports.
func (a *authority) forget(st *resourceState) {
	a.c.setCache(st, nil)
	st.version = ""
	st.hasUpdate = false
	// grpc-java onAbsent, the one path that drops a resource without an
	// error: the resource is absent, and lastError goes with the data.
	st.setLastErr(nil)
}

// resourceTimeout applies an expired does-not-exist timer (grpc-go
// handleADSResourceDoesNotExist, which neither checks server priority nor
// the cache; gRFC A88 "Changes to Resource Timer Behavior").
func (a *authority) resourceTimeout(typ ResourceType, name string, feat ServerFeatures) {
	c := a.c
	st := a.state(typ, name)
	if st == nil {
		return
	}
	a.forget(st)
	if c.prof.A88DataErrors && feat.ResourceTimerIsTransientError {
		s := Status{Code: codes.Unavailable, Message: fmt.Sprintf("xds: timed out waiting for resource %q of type %v", name, typ)}
		c.setStatus(st, adminpb.ClientResourceStatus_TIMEOUT)
		st.setErr(&errState{status: s, cause: CauseTimeout, at: c.now})
		a.notifyAllErr(typ, name, st, s, CauseTimeout)
		return
	}
	c.setStatus(st, adminpb.ClientResourceStatus_DOES_NOT_EXIST)
	st.setErr(nil)
	a.notifyAllErr(typ, name, st, notFound(typ, name), CauseTimeout)
}

func (a *authority) cached(typ ResourceType, name string) bool {
	st := a.state(typ, name)
	return st != nil && st.cache != nil
}

// resolved reports whether the entry has a resource or was found absent
// (timed out or deleted): grpc-java ResourceSubscriber.hasResult.
func (a *authority) resolved(typ ResourceType, name string) bool {
	st := a.state(typ, name)
	return st != nil && (st.cache != nil || st.status() == adminpb.ClientResourceStatus_DOES_NOT_EXIST || st.status() == adminpb.ClientResourceStatus_TIMEOUT)
}

// notFound is grpc-go's text for both a deletion and a timer expiry.
func notFound(typ ResourceType, name string) Status {
	return Status{Code: codes.NotFound, Message: fmt.Sprintf("xds: resource %q of type %v has been removed", name, typ)}
}

func connectivityStatus(st Status) Status {
	return Status{Code: codes.Unavailable, Message: "xds: error received from xDS stream: " + st.String()}
}
