// Package envoy evaluates the xDS configuration Istio generates the way Envoy does for one request:
// listener, filter chain, virtual host, route, cluster and the RBAC decision. It is written from Envoy's
// documented semantics (the v3 API reference of each message); it depends on Istio only for the
// generated configuration, never on Istio's own simulator.
package envoy

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
)

// Request is one request as a proxy sees it.
type Request struct {
	// Authority is the Host / :authority header as sent (with a port when the client wrote one).
	Authority string
	// Path is the :path header: the path and the query string.
	Path   string
	Method string
	// Headers are the other request headers, names in lower case.
	Headers map[string]string
	// Scheme is http or https (the :scheme the proxy sees; only used by redirects).
	Scheme string
}

// Header reads a header the way Envoy's header matchers do, pseudo-headers included.
func (r Request) Header(name string) (string, bool) {
	switch strings.ToLower(name) {
	case ":authority", "host":
		return r.Authority, r.Authority != ""
	case ":path":
		return r.Path, true
	case ":method":
		return r.Method, true
	case ":scheme":
		return r.Scheme, r.Scheme != ""
	}
	v, ok := r.Headers[strings.ToLower(name)]
	return v, ok
}

// pathOnly is the path without its query string, as route path matchers see it.
func (r Request) pathOnly() string {
	if i := strings.IndexByte(r.Path, '?'); i >= 0 {
		return r.Path[:i]
	}
	return r.Path
}

// MatchVirtualHost picks the virtual host for an authority as Envoy does: an exact domain first, then the
// longest suffix wildcard (`*.foo.com`, `*-bar.foo.com`), then the longest prefix wildcard (`foo.*`),
// then `*`. The authority is compared case-insensitively; Envoy matches the port as part of the domain
// (Istio lists domains with and without the port), and with strip_any_host_port the port is dropped first.
func MatchVirtualHost(rc *route.RouteConfiguration, authority string, stripPort bool) *route.VirtualHost {
	host := strings.ToLower(authority)
	if stripPort {
		host = withoutPort(host)
	}
	var exact, star *route.VirtualHost
	var suffix, prefix *route.VirtualHost
	suffixLen, prefixLen := -1, -1
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			switch {
			case d == "*":
				if star == nil {
					star = vh
				}
			case d == host:
				if exact == nil {
					exact = vh
				}
			case strings.HasPrefix(d, "*"):
				// A suffix wildcard matches at least one character before the suffix.
				s := d[1:]
				if len(host) > len(s) && strings.HasSuffix(host, s) && len(s) > suffixLen {
					suffix, suffixLen = vh, len(s)
				}
			case strings.HasSuffix(d, "*"):
				p := d[:len(d)-1]
				if len(host) > len(p) && strings.HasPrefix(host, p) && len(p) > prefixLen {
					prefix, prefixLen = vh, len(p)
				}
			}
		}
	}
	switch {
	case exact != nil:
		return exact
	case suffix != nil:
		return suffix
	case prefix != nil:
		return prefix
	}
	return star
}

func withoutPort(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.Index(host, "]"); i >= 0 {
			return host[:i+1]
		}
		return host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		return host[:i]
	}
	return host
}

// MatchRoute returns the first route of the virtual host whose match accepts the request, in order.
func MatchRoute(vh *route.VirtualHost, r Request) (*route.Route, error) {
	for _, rt := range vh.GetRoutes() {
		ok, err := routeMatches(rt.GetMatch(), r)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", rt.GetName(), err)
		}
		if ok {
			return rt, nil
		}
	}
	return nil, nil
}

func routeMatches(m *route.RouteMatch, r Request) (bool, error) {
	if m == nil {
		return false, nil
	}
	caseSensitive := m.GetCaseSensitive() == nil || m.GetCaseSensitive().GetValue()
	path := r.pathOnly()
	switch spec := m.GetPathSpecifier().(type) {
	case *route.RouteMatch_Prefix:
		if !hasPrefix(path, spec.Prefix, caseSensitive) {
			return false, nil
		}
	case *route.RouteMatch_Path:
		if !equal(path, spec.Path, caseSensitive) {
			return false, nil
		}
	case *route.RouteMatch_SafeRegex:
		// The whole path must match (RE2, anchored); case_sensitive does not apply to regexes.
		ok, err := fullMatch(spec.SafeRegex.GetRegex(), path)
		if err != nil || !ok {
			return false, err
		}
	case *route.RouteMatch_PathSeparatedPrefix:
		p := spec.PathSeparatedPrefix
		if !hasPrefix(path, p, caseSensitive) {
			return false, nil
		}
		if rest := path[len(p):]; rest != "" && rest[0] != '/' {
			return false, nil
		}
	case *route.RouteMatch_ConnectMatcher_:
		if r.Method != "CONNECT" {
			return false, nil
		}
	case nil:
		return false, fmt.Errorf("a route match without a path specifier")
	default:
		return false, fmt.Errorf("unsupported path specifier %T", spec)
	}
	for _, h := range m.GetHeaders() {
		ok, err := HeaderMatches(h, r)
		if err != nil || !ok {
			return false, err
		}
	}
	if len(m.GetQueryParameters()) > 0 {
		query := queryOf(r.Path)
		for _, q := range m.GetQueryParameters() {
			ok, err := queryMatches(q, query)
			if err != nil || !ok {
				return false, err
			}
		}
	}
	if m.GetGrpc() != nil {
		if ct, _ := r.Header("content-type"); !strings.HasPrefix(ct, "application/grpc") {
			return false, nil
		}
	}
	if m.GetRuntimeFraction() != nil {
		// A runtime fraction below 100% makes the match random: the oracle cannot answer it.
		f := m.GetRuntimeFraction().GetDefaultValue()
		if f.GetNumerator() == 0 {
			return false, nil
		}
		if !fullFraction(f) {
			return false, fmt.Errorf("a runtime fraction of %d/%v", f.GetNumerator(), f.GetDenominator())
		}
	}
	if len(m.GetDynamicMetadata()) > 0 || m.GetFilterState() != nil || m.GetTlsContext() != nil {
		return false, fmt.Errorf("a route match on metadata, filter state or TLS context")
	}
	return true, nil
}

func hasPrefix(s, prefix string, caseSensitive bool) bool {
	if caseSensitive {
		return strings.HasPrefix(s, prefix)
	}
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func equal(a, b string, caseSensitive bool) bool {
	if caseSensitive {
		return a == b
	}
	return strings.EqualFold(a, b)
}

// HeaderMatches is Envoy's HeaderMatcher: a missing header matches only present_match false (or an
// inverted matcher, unless treat_missing_header_as_empty); a header's value is tested whole.
func HeaderMatches(h *route.HeaderMatcher, r Request) (bool, error) {
	value, present := r.Header(h.GetName())
	if !present && h.GetTreatMissingHeaderAsEmpty() {
		value, present = "", true
	}
	var ok bool
	switch spec := h.GetHeaderMatchSpecifier().(type) {
	case *route.HeaderMatcher_PresentMatch:
		ok = present == spec.PresentMatch
		if h.GetInvertMatch() {
			ok = !ok
		}
		return ok, nil
	case nil:
		// No specifier: the header is present.
		ok = present
		if h.GetInvertMatch() {
			ok = !ok
		}
		return ok, nil
	}
	if !present {
		// A missing header fails every value matcher, inverted or not.
		return false, nil
	}
	switch spec := h.GetHeaderMatchSpecifier().(type) {
	case *route.HeaderMatcher_ExactMatch:
		ok = value == spec.ExactMatch
	case *route.HeaderMatcher_PrefixMatch:
		ok = strings.HasPrefix(value, spec.PrefixMatch)
	case *route.HeaderMatcher_SuffixMatch:
		ok = strings.HasSuffix(value, spec.SuffixMatch)
	case *route.HeaderMatcher_ContainsMatch:
		ok = strings.Contains(value, spec.ContainsMatch)
	case *route.HeaderMatcher_SafeRegexMatch:
		var err error
		if ok, err = fullMatch(spec.SafeRegexMatch.GetRegex(), value); err != nil {
			return false, err
		}
	case *route.HeaderMatcher_RangeMatch:
		var n int64
		if _, err := fmt.Sscan(value, &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(value) {
			ok = false
		} else {
			ok = n >= spec.RangeMatch.GetStart() && n < spec.RangeMatch.GetEnd()
		}
	case *route.HeaderMatcher_StringMatch:
		var err error
		if ok, err = StringMatches(spec.StringMatch, value); err != nil {
			return false, err
		}
	default:
		return false, fmt.Errorf("unsupported header matcher %T", spec)
	}
	if h.GetInvertMatch() {
		ok = !ok
	}
	return ok, nil
}

// StringMatches is Envoy's StringMatcher (exact, prefix, suffix, contains, safe_regex; ignore_case for
// all but the regex).
func StringMatches(m *matcher.StringMatcher, value string) (bool, error) {
	v := value
	fold := m.GetIgnoreCase()
	if fold {
		v = strings.ToLower(v)
	}
	lower := func(s string) string {
		if fold {
			return strings.ToLower(s)
		}
		return s
	}
	switch spec := m.GetMatchPattern().(type) {
	case *matcher.StringMatcher_Exact:
		return v == lower(spec.Exact), nil
	case *matcher.StringMatcher_Prefix:
		return strings.HasPrefix(v, lower(spec.Prefix)), nil
	case *matcher.StringMatcher_Suffix:
		return strings.HasSuffix(v, lower(spec.Suffix)), nil
	case *matcher.StringMatcher_Contains:
		return strings.Contains(v, lower(spec.Contains)), nil
	case *matcher.StringMatcher_SafeRegex:
		return fullMatch(spec.SafeRegex.GetRegex(), value)
	}
	return false, fmt.Errorf("unsupported string matcher %T", m.GetMatchPattern())
}

var regexCache = map[string]*regexp.Regexp{}

// fullMatch is RE2's full match, as Envoy's safe_regex does (Go's regexp is RE2's syntax and semantics).
func fullMatch(pattern, value string) (bool, error) {
	re, ok := regexCache[pattern]
	if !ok {
		var err error
		if re, err = regexp.Compile(`^(?:` + pattern + `)$`); err != nil {
			return false, fmt.Errorf("regex %q: %w", pattern, err)
		}
		regexCache[pattern] = re
	}
	return re.MatchString(value), nil
}

// queryOf parses the query string the way Envoy's query parameter matchers read it: the first value of
// each name, percent-decoded.
func queryOf(path string) map[string]string {
	out := map[string]string{}
	i := strings.IndexByte(path, '?')
	if i < 0 {
		return out
	}
	for _, part := range strings.Split(path[i+1:], "&") {
		if part == "" {
			continue
		}
		name, value, _ := strings.Cut(part, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		if _, seen := out[name]; !seen {
			out[name] = value
		}
	}
	return out
}

func queryMatches(q *route.QueryParameterMatcher, query map[string]string) (bool, error) {
	value, present := query[q.GetName()]
	switch spec := q.GetQueryParameterMatchSpecifier().(type) {
	case *route.QueryParameterMatcher_PresentMatch:
		return present == spec.PresentMatch, nil
	case *route.QueryParameterMatcher_StringMatch:
		if !present {
			return false, nil
		}
		return StringMatches(spec.StringMatch, value)
	case nil:
		return present, nil
	}
	return false, fmt.Errorf("unsupported query matcher %T", q.GetQueryParameterMatchSpecifier())
}

// fullFraction says whether a fractional percent is 100% (or more).
func fullFraction(f *typev3.FractionalPercent) bool {
	denominator := map[typev3.FractionalPercent_DenominatorType]uint32{
		typev3.FractionalPercent_HUNDRED:      100,
		typev3.FractionalPercent_TEN_THOUSAND: 10_000,
		typev3.FractionalPercent_MILLION:      1_000_000,
	}[f.GetDenominator()]
	return f.GetNumerator() >= denominator
}

// Action is what a matched route does with the request.
type Action struct {
	// Cluster is the cluster for a single destination.
	Cluster string `json:"cluster,omitempty"`
	// Weighted lists the clusters of a weighted split, each with its weight.
	Weighted []WeightedCluster `json:"weighted,omitempty"`
	// Redirect is the Location of a redirect, with its status code.
	Redirect     string `json:"redirect,omitempty"`
	RedirectCode int    `json:"redirectCode,omitempty"`
	// DirectCode is the status of a direct response.
	DirectCode int `json:"directCode,omitempty"`
	// NotFoundCode is the status when the cluster does not exist (cluster_not_found_response_code: 503 by
	// default, 404 or 500 when the route says so).
	NotFoundCode int `json:"-"`
	// Rewritten path and authority the upstream sees (when the route rewrites them).
	Path      string `json:"path,omitempty"`
	Authority string `json:"authority,omitempty"`
}

// WeightedCluster is one cluster of a weighted split.
type WeightedCluster struct {
	Name   string `json:"name"`
	Weight uint32 `json:"weight"`
}

// ActionOf reads a matched route's action for the request.
func ActionOf(rt *route.Route, r Request) (Action, error) {
	switch a := rt.GetAction().(type) {
	case *route.Route_Route:
		out := Action{NotFoundCode: 503}
		switch a.Route.GetClusterNotFoundResponseCode() {
		case route.RouteAction_NOT_FOUND:
			out.NotFoundCode = 404
		case route.RouteAction_INTERNAL_SERVER_ERROR:
			out.NotFoundCode = 500
		}
		switch c := a.Route.GetClusterSpecifier().(type) {
		case *route.RouteAction_Cluster:
			out.Cluster = c.Cluster
		case *route.RouteAction_WeightedClusters:
			for _, w := range c.WeightedClusters.GetClusters() {
				if w.GetWeight().GetValue() == 0 {
					continue
				}
				out.Weighted = append(out.Weighted, WeightedCluster{Name: w.GetName(), Weight: w.GetWeight().GetValue()})
			}
			sort.SliceStable(out.Weighted, func(i, j int) bool { return out.Weighted[i].Name < out.Weighted[j].Name })
			if len(out.Weighted) == 1 {
				out.Cluster, out.Weighted = out.Weighted[0].Name, nil
			}
		case *route.RouteAction_ClusterHeader:
			v, _ := r.Header(c.ClusterHeader)
			out.Cluster = v
		default:
			return Action{}, fmt.Errorf("unsupported cluster specifier %T", c)
		}
		path, err := rewrittenPath(rt, a.Route, r)
		if err != nil {
			return Action{}, err
		}
		if path != r.Path {
			out.Path = path
		}
		if h := a.Route.GetHostRewriteLiteral(); h != "" {
			out.Authority = h
		}
		return out, nil
	case *route.Route_Redirect:
		loc, code := redirectOf(rt.GetMatch(), a.Redirect, r)
		return Action{Redirect: loc, RedirectCode: code}, nil
	case *route.Route_DirectResponse:
		return Action{DirectCode: int(a.DirectResponse.GetStatus())}, nil
	case *route.Route_NonForwardingAction:
		return Action{}, nil
	}
	return Action{}, fmt.Errorf("unsupported route action %T", rt.GetAction())
}

// rewrittenPath applies prefix_rewrite (replacing the matched prefix) or regex_rewrite (every match
// replaced, as RE2::GlobalReplace) to the path; the query string is kept.
func rewrittenPath(rt *route.Route, a *route.RouteAction, r Request) (string, error) {
	path, query := r.pathOnly(), ""
	if i := strings.IndexByte(r.Path, '?'); i >= 0 {
		query = r.Path[i:]
	}
	if p := a.GetPrefixRewrite(); p != "" {
		matched := ""
		switch spec := rt.GetMatch().GetPathSpecifier().(type) {
		case *route.RouteMatch_Prefix:
			matched = spec.Prefix
		case *route.RouteMatch_Path:
			matched = spec.Path
		case *route.RouteMatch_PathSeparatedPrefix:
			matched = spec.PathSeparatedPrefix
		default:
			return "", fmt.Errorf("prefix_rewrite on a %T match", spec)
		}
		return p + path[len(matched):] + query, nil
	}
	if rr := a.GetRegexRewrite(); rr != nil {
		re, err := regexp.Compile(rr.GetPattern().GetRegex())
		if err != nil {
			return "", err
		}
		return re.ReplaceAllString(path, re2Substitution(rr.GetSubstitution())) + query, nil
	}
	return r.Path, nil
}

// re2Substitution turns RE2's \1 references into Go's ${1}.
func re2Substitution(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
			b.WriteString("${" + string(s[i+1]) + "}")
			i++
			continue
		}
		if s[i] == '$' {
			b.WriteString("$$")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// redirectOf is the Location and status of a redirect: scheme, host, port and path each replaced when the
// redirect names them, the query kept unless strip_query; the default port of the scheme is left out.
func redirectOf(m *route.RouteMatch, rd *route.RedirectAction, r Request) (string, int) {
	scheme := r.Scheme
	if scheme == "" {
		scheme = "http"
	}
	if s := rd.GetSchemeRedirect(); s != "" {
		scheme = s
	} else if rd.GetHttpsRedirect() {
		scheme = "https"
	}
	host, port := withoutPort(r.Authority), ""
	if len(host) < len(r.Authority) {
		port = r.Authority[len(host)+1:]
	}
	if h := rd.GetHostRedirect(); h != "" {
		host = h
	}
	if p := rd.GetPortRedirect(); p != 0 {
		port = fmt.Sprint(p)
	} else if rd.GetSchemeRedirect() != "" || rd.GetHttpsRedirect() {
		// A scheme change drops a default port of the old scheme.
		if port == "80" || port == "443" {
			port = ""
		}
	}
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	path := r.Path
	switch p := rd.GetPathRewriteSpecifier().(type) {
	case *route.RedirectAction_PathRedirect:
		path = p.PathRedirect
		if i := strings.IndexByte(r.Path, '?'); i >= 0 && !strings.Contains(path, "?") {
			path += r.Path[i:]
		}
	case *route.RedirectAction_PrefixRewrite:
		matched := m.GetPrefix()
		if matched == "" {
			matched = m.GetPathSeparatedPrefix()
		}
		path = p.PrefixRewrite + strings.TrimPrefix(r.Path, matched)
	}
	if rd.GetStripQuery() {
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
	}
	code := 301
	switch rd.GetResponseCode() {
	case route.RedirectAction_FOUND:
		code = 302
	case route.RedirectAction_SEE_OTHER:
		code = 303
	case route.RedirectAction_TEMPORARY_REDIRECT:
		code = 307
	case route.RedirectAction_PERMANENT_REDIRECT:
		code = 308
	}
	loc := scheme + "://" + host
	if port != "" {
		loc += ":" + port
	}
	return loc + path, code
}
