package main

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"istio.io/istio/pkg/util/sets"
	"istio.io/istio/pkg/workloadapi/security"

	"kfmesh.test/oracle/istio/envoy"
)

// A destination ztunnel's authorization of one connection. istiod's ambient index (the one the fake
// discovery server builds with PILOT_ENABLE_AMBIENT) gives the policies it sends to ztunnel, already
// converted: L7 parts dropped or turned into denials, PeerAuthentication STRICT turned into policies, and
// the list of policies each workload carries. What ztunnel then does with them is evaluated here, written
// from ztunnel's documented behaviour (the authorization policy reference, which ztunnel's inbound check
// follows): the policies of the workload's namespace, of the root namespace (global scope) and the ones the
// workload lists apply; any matching DENY denies; with no ALLOW policy the connection is allowed; else an
// ALLOW policy must match. Dry-run policies are not enforced.

// ztunnelAnswer answers a connection to q.Address:q.Port from q.SourceIP with q.Principal (none unless
// the connection is HBONE, which carries the sender's identity).
func (w *world) ztunnelAnswer(q RequestIn) Answer {
	index := w.server.Env().AmbientIndexes
	infos, _ := index.AddressInformation(sets.New("/" + q.Address))
	var wl interface {
		GetNamespace() string
		GetAuthorizationPolicies() []string
	}
	for _, info := range infos {
		if got := info.GetWorkload(); got != nil {
			wl = got
			break
		}
	}
	if wl == nil {
		return Answer{Outcome: "no_workload", Error: fmt.Sprintf("no workload at %s in istiod's ambient index", q.Address)}
	}
	byKey := map[string]*security.Authorization{}
	for _, p := range index.Policies(nil) {
		byKey[p.ResourceName()] = p.Authorization
	}
	var applied []*security.Authorization
	seen := map[string]bool{}
	add := func(a *security.Authorization) {
		if key := a.GetNamespace() + "/" + a.GetName(); !seen[key] && !a.GetDryRun() {
			seen[key] = true
			applied = append(applied, a)
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := byKey[k]
		switch a.GetScope() {
		case security.Scope_GLOBAL:
			add(a)
		case security.Scope_NAMESPACE:
			if a.GetNamespace() == wl.GetNamespace() {
				add(a)
			}
		}
	}
	for _, k := range wl.GetAuthorizationPolicies() {
		if a := byKey[k]; a != nil {
			add(a)
		}
	}
	c, err := ztunnelConnection(q)
	if err != nil {
		return Answer{Outcome: "error", Error: err.Error()}
	}
	return ztunnelDecide(applied, c)
}

// ztunnelDecide applies the policies to the connection: every matching DENY policy is listed (ztunnel
// reports one of them; their order there is not defined), else the first matching ALLOW one.
func ztunnelDecide(policies []*security.Authorization, c l4Conn) Answer {
	a := Answer{Listener: "ztunnel"}
	allows := 0
	for _, p := range policies {
		if p.GetAction() == security.Action_DENY && l4Matches(p, c) {
			a.RBAC = append(a.RBAC, envoy.Decision{Action: "DENY", Allowed: false, Policy: p.GetNamespace() + "/" + p.GetName()})
		}
		if p.GetAction() == security.Action_ALLOW {
			allows++
		}
	}
	if len(a.RBAC) > 0 {
		a.Outcome = "rbac_denied"
		return a
	}
	if allows == 0 {
		a.Outcome = "forwarded"
		return a
	}
	for _, p := range policies {
		if p.GetAction() == security.Action_ALLOW && l4Matches(p, c) {
			a.RBAC = []envoy.Decision{{Action: "ALLOW", Allowed: true, Policy: p.GetNamespace() + "/" + p.GetName()}}
			a.Outcome = "forwarded"
			return a
		}
	}
	a.RBAC = []envoy.Decision{{Action: "ALLOW", Allowed: false}}
	a.Outcome = "rbac_denied"
	return a
}

// l4Conn is what ztunnel knows of a connection: addresses and, over HBONE, the peer's identity.
type l4Conn struct {
	src, dst netip.Addr
	port     uint32
	// identity is the SPIFFE id without its scheme (trust-domain/ns/NS/sa/SA), empty without one.
	identity           string
	namespace, account string
}

func ztunnelConnection(q RequestIn) (l4Conn, error) {
	c := l4Conn{port: q.Port}
	var err error
	if c.dst, err = netip.ParseAddr(q.Address); err != nil {
		return c, fmt.Errorf("destination address %q: %w", q.Address, err)
	}
	if c.src, err = netip.ParseAddr(q.SourceIP); err != nil {
		return c, fmt.Errorf("source address %q: %w", q.SourceIP, err)
	}
	if q.Principal != "" {
		id, ok := strings.CutPrefix(q.Principal, "spiffe://")
		parts := strings.Split(id, "/")
		if !ok || len(parts) != 5 || parts[1] != "ns" || parts[3] != "sa" {
			return c, fmt.Errorf("principal %q is not spiffe://TD/ns/NS/sa/SA", q.Principal)
		}
		c.identity, c.namespace, c.account = id, parts[2], parts[4]
	}
	return c, nil
}

// l4Matches: the policy's groups are alternatives; a group's rules must all hold; a rule holds when one of
// its matches does (a match with no field at all holds for nothing; a rule with no match holds); a match
// holds when each of its fields does, a field holding when one of its values matches and none of its
// negated values does. A policy without groups matches nothing.
func l4Matches(p *security.Authorization, c l4Conn) bool {
	for _, g := range p.GetGroups() {
		all := true
		for _, r := range g.GetRules() {
			if !ruleHolds(r, c) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func ruleHolds(r *security.Rules, c l4Conn) bool {
	if len(r.GetMatches()) == 0 {
		return true
	}
	for _, m := range r.GetMatches() {
		if matchEmpty(m) {
			continue
		}
		if matchHolds(m, c) {
			return true
		}
	}
	return false
}

func matchEmpty(m *security.Match) bool {
	return len(m.GetNamespaces())+len(m.GetNotNamespaces())+len(m.GetServiceAccounts())+
		len(m.GetNotServiceAccounts())+len(m.GetPrincipals())+len(m.GetNotPrincipals())+
		len(m.GetSourceIps())+len(m.GetNotSourceIps())+len(m.GetDestinationIps())+
		len(m.GetNotDestinationIps())+len(m.GetDestinationPorts())+len(m.GetNotDestinationPorts()) == 0
}

func matchHolds(m *security.Match, c l4Conn) bool {
	return field(validAddresses(m.GetDestinationIps()), validAddresses(m.GetNotDestinationIps()), func(a netip.Prefix) bool { return a.Contains(c.dst) }) &&
		field(validAddresses(m.GetSourceIps()), validAddresses(m.GetNotSourceIps()), func(a netip.Prefix) bool { return a.Contains(c.src) }) &&
		field(m.GetDestinationPorts(), m.GetNotDestinationPorts(), func(p uint32) bool { return p == c.port }) &&
		field(m.GetServiceAccounts(), m.GetNotServiceAccounts(), func(s *security.ServiceAccountMatch) bool {
			return c.identity != "" && s.GetNamespace() == c.namespace && s.GetServiceAccount() == c.account
		}) &&
		field(validStrings(m.GetPrincipals()), validStrings(m.GetNotPrincipals()), func(s *security.StringMatch) bool {
			// A principal is matched without its spiffe:// scheme; no identity matches no principal.
			return c.identity != "" && stringMatches(s, c.identity)
		}) &&
		field(validStrings(m.GetNamespaces()), validStrings(m.GetNotNamespaces()), func(s *security.StringMatch) bool {
			return stringMatches(s, c.namespace)
		})
}

// field holds when one of the values matches (or none is given) and none of the negated ones does.
func field[T any](values, not []T, matches func(T) bool) bool {
	if len(values) > 0 && !anyOf(values, matches) {
		return false
	}
	return !anyOf(not, matches)
}

func anyOf[T any](values []T, matches func(T) bool) bool {
	for _, v := range values {
		if matches(v) {
			return true
		}
	}
	return false
}

// validStrings drops string matches that say nothing (no kind of match set), as ztunnel does on reading.
func validStrings(in []*security.StringMatch) []*security.StringMatch {
	out := in[:0:0]
	for _, s := range in {
		if s.GetMatchType() != nil {
			out = append(out, s)
		}
	}
	return out
}

func stringMatches(s *security.StringMatch, v string) bool {
	switch t := s.GetMatchType().(type) {
	case *security.StringMatch_Exact:
		return v == t.Exact
	case *security.StringMatch_Prefix:
		return strings.HasPrefix(v, t.Prefix)
	case *security.StringMatch_Suffix:
		return strings.HasSuffix(v, t.Suffix)
	case *security.StringMatch_Presence:
		return v != ""
	}
	return false
}

// validAddresses are the address blocks ztunnel reads (a malformed one is dropped on reading).
func validAddresses(in []*security.Address) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range in {
		addr, ok := netip.AddrFromSlice(a.GetAddress())
		if !ok {
			continue
		}
		if prefix, err := addr.Unmap().Prefix(int(a.GetLength())); err == nil {
			out = append(out, prefix)
		}
	}
	return out
}
