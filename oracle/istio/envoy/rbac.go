package envoy

import (
	"fmt"
	"sort"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Peer is what an RBAC filter knows of the request besides its headers: the connection and what
// authentication established.
type Peer struct {
	// Principal is the URI SAN of the client certificate (mTLS), empty without one.
	Principal string
	// DirectRemoteIP is the address of the downstream connection; RemoteIP the client address after
	// X-Forwarded-For handling (the same here unless the input says otherwise).
	DirectRemoteIP  string
	RemoteIP        string
	DestinationIP   string
	DestinationPort uint32
	SNI             string
	// Metadata is the dynamic metadata filters before RBAC wrote, by filter name (istio_authn holds
	// request.auth.principal, request.auth.audiences, request.auth.presenter, request.auth.claims).
	Metadata map[string]map[string]any
	// FilterState is the connection's filter state as strings, by key (a waypoint keeps the HBONE peer's
	// identity in io.istio.peer_principal).
	FilterState map[string]string
}

// Decision is an RBAC filter's verdict on one request.
type Decision struct {
	// Action is ALLOW, DENY or LOG (the filter's), Allowed the verdict, Policy the matched policy's name
	// (the first by name, as Envoy's engine orders them).
	Action  string `json:"action"`
	Allowed bool   `json:"allowed"`
	Policy  string `json:"policy,omitempty"`
}

// Evaluate applies RBAC rules to a request (nil request: a connection, for the network filter, where
// HTTP fields never match). Absent rules allow everything.
func Evaluate(rules *rbacv3.RBAC, r *Request, p Peer) (Decision, error) {
	if rules == nil {
		return Decision{Action: "NONE", Allowed: true}, nil
	}
	names := make([]string, 0, len(rules.GetPolicies()))
	for name := range rules.GetPolicies() {
		names = append(names, name)
	}
	sort.Strings(names)
	matched := ""
	for _, name := range names {
		ok, err := policyMatches(rules.GetPolicies()[name], r, p)
		if err != nil {
			return Decision{}, fmt.Errorf("policy %s: %w", name, err)
		}
		if ok {
			matched = name
			break
		}
	}
	d := Decision{Action: rules.GetAction().String(), Policy: matched}
	switch rules.GetAction() {
	case rbacv3.RBAC_ALLOW:
		d.Allowed = matched != ""
	case rbacv3.RBAC_DENY:
		d.Allowed = matched == ""
	case rbacv3.RBAC_LOG:
		d.Allowed = true
	}
	return d, nil
}

func policyMatches(pol *rbacv3.Policy, r *Request, p Peer) (bool, error) {
	if pol.GetCondition() != nil || pol.GetCheckedCondition() != nil {
		return false, fmt.Errorf("a CEL condition")
	}
	permitted := false
	for _, perm := range pol.GetPermissions() {
		ok, err := permissionMatches(perm, r, p)
		if err != nil {
			return false, err
		}
		if ok {
			permitted = true
			break
		}
	}
	if !permitted {
		return false, nil
	}
	for _, id := range pol.GetPrincipals() {
		ok, err := principalMatches(id, r, p)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func permissionMatches(perm *rbacv3.Permission, r *Request, p Peer) (bool, error) {
	switch rule := perm.GetRule().(type) {
	case *rbacv3.Permission_Any:
		return rule.Any, nil
	case *rbacv3.Permission_AndRules:
		for _, q := range rule.AndRules.GetRules() {
			ok, err := permissionMatches(q, r, p)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case *rbacv3.Permission_OrRules:
		for _, q := range rule.OrRules.GetRules() {
			ok, err := permissionMatches(q, r, p)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case *rbacv3.Permission_NotRule:
		ok, err := permissionMatches(rule.NotRule, r, p)
		return !ok, err
	case *rbacv3.Permission_Header:
		if r == nil {
			return false, nil
		}
		return HeaderMatches(rule.Header, *r)
	case *rbacv3.Permission_UrlPath:
		if r == nil {
			return false, nil
		}
		return pathMatches(rule.UrlPath, *r)
	case *rbacv3.Permission_DestinationIp:
		return ipIn(rule.DestinationIp, p.DestinationIP)
	case *rbacv3.Permission_DestinationPort:
		return rule.DestinationPort == p.DestinationPort, nil
	case *rbacv3.Permission_DestinationPortRange:
		return int64(p.DestinationPort) >= int64(rule.DestinationPortRange.GetStart()) &&
			int64(p.DestinationPort) < int64(rule.DestinationPortRange.GetEnd()), nil
	case *rbacv3.Permission_RequestedServerName:
		return StringMatches(rule.RequestedServerName, p.SNI)
	case *rbacv3.Permission_Metadata:
		return metadataMatches(rule.Metadata, p)
	}
	return false, fmt.Errorf("unsupported permission %T", perm.GetRule())
}

func principalMatches(id *rbacv3.Principal, r *Request, p Peer) (bool, error) {
	switch rule := id.GetIdentifier().(type) {
	case *rbacv3.Principal_Any:
		return rule.Any, nil
	case *rbacv3.Principal_AndIds:
		for _, q := range rule.AndIds.GetIds() {
			ok, err := principalMatches(q, r, p)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case *rbacv3.Principal_OrIds:
		for _, q := range rule.OrIds.GetIds() {
			ok, err := principalMatches(q, r, p)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case *rbacv3.Principal_NotId:
		ok, err := principalMatches(rule.NotId, r, p)
		return !ok, err
	case *rbacv3.Principal_Authenticated_:
		// Without a peer certificate, authenticated never matches.
		if p.Principal == "" {
			return false, nil
		}
		if rule.Authenticated.GetPrincipalName() == nil {
			return true, nil
		}
		return StringMatches(rule.Authenticated.GetPrincipalName(), p.Principal)
	case *rbacv3.Principal_SourceIp:
		return ipIn(rule.SourceIp, p.DirectRemoteIP)
	case *rbacv3.Principal_DirectRemoteIp:
		return ipIn(rule.DirectRemoteIp, p.DirectRemoteIP)
	case *rbacv3.Principal_RemoteIp:
		remote := p.RemoteIP
		if remote == "" {
			remote = p.DirectRemoteIP
		}
		return ipIn(rule.RemoteIp, remote)
	case *rbacv3.Principal_Header:
		if r == nil {
			return false, nil
		}
		return HeaderMatches(rule.Header, *r)
	case *rbacv3.Principal_UrlPath:
		if r == nil {
			return false, nil
		}
		return pathMatches(rule.UrlPath, *r)
	case *rbacv3.Principal_Metadata:
		return metadataMatches(rule.Metadata, p)
	case *rbacv3.Principal_FilterState:
		// An object the filter state does not hold matches nothing.
		v, ok := p.FilterState[rule.FilterState.GetKey()]
		if !ok {
			return false, nil
		}
		sm := rule.FilterState.GetStringMatch()
		if sm == nil {
			return false, fmt.Errorf("a filter state matcher without a string matcher (key %s)", rule.FilterState.GetKey())
		}
		return StringMatches(sm, v)
	}
	return false, fmt.Errorf("unsupported principal %T", id.GetIdentifier())
}

func pathMatches(m *matcher.PathMatcher, r Request) (bool, error) {
	s := m.GetPath()
	if s == nil {
		return false, fmt.Errorf("a path matcher without a string matcher")
	}
	return StringMatches(s, r.pathOnly())
}

func ipIn(r *core.CidrRange, ip string) (bool, error) {
	a, err := parseAddr(ip)
	if err != nil || !a.IsValid() {
		return false, err
	}
	pfx, err := prefixOf(r)
	if err != nil {
		return false, err
	}
	return pfx.Contains(a), nil
}

// metadataMatches is Envoy's MetadataMatcher over the dynamic metadata of one filter: the value at the
// path must satisfy the value matcher (invert flips the result).
func metadataMatches(m *matcher.MetadataMatcher, p Peer) (bool, error) {
	var v any = map[string]any(p.Metadata[m.GetFilter()])
	for _, seg := range m.GetPath() {
		obj, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		v = obj[seg.GetKey()]
	}
	ok, err := valueMatches(m.GetValue(), v)
	if m.GetInvert() {
		ok = !ok
	}
	return ok, err
}

func valueMatches(m *matcher.ValueMatcher, v any) (bool, error) {
	switch spec := m.GetMatchPattern().(type) {
	case *matcher.ValueMatcher_NullMatch_:
		return v == nil, nil
	case *matcher.ValueMatcher_PresentMatch:
		return (v != nil) == spec.PresentMatch, nil
	case *matcher.ValueMatcher_BoolMatch:
		b, ok := v.(bool)
		return ok && b == spec.BoolMatch, nil
	case *matcher.ValueMatcher_StringMatch:
		s, ok := v.(string)
		if !ok {
			return false, nil
		}
		return StringMatches(spec.StringMatch, s)
	case *matcher.ValueMatcher_ListMatch:
		list, ok := v.([]any)
		if !ok {
			return false, nil
		}
		for _, item := range list {
			if ok, err := valueMatches(spec.ListMatch.GetOneOf(), item); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case *matcher.ValueMatcher_OrMatch:
		for _, q := range spec.OrMatch.GetValueMatchers() {
			if ok, err := valueMatches(q, v); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("unsupported value matcher %T", m.GetMatchPattern())
}

// IsExtAuthzShadow says whether RBAC shadow rules mark requests for an external authorizer (Istio's
// CUSTOM action), by their stat prefix.
func IsExtAuthzShadow(prefix string) bool { return strings.HasPrefix(prefix, "istio_ext_authz_") }
