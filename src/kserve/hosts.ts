/**
 * Host names, host regexes and KServe's domain and path templates, with Go's semantics where KServe
 * relies on them (`regexp.QuoteMeta`, `text/template` field lookup, Kubernetes DNS validation).
 */

/** A failure to build a host or path from a template or a name, with the reason. */
export class HostError extends Error {
  override name = 'HostError';
}

/** Go's `regexp.QuoteMeta`: escapes exactly `\.+*?()|[]{}^$` (not `-`). */
export function quoteMeta(text: string): string {
  return text.replace(/[\\.+*?()|[\]{}^$]/g, (c) => `\\${c}`);
}

/** KServe's optional port suffix of host regexes. */
const portMatch = '(?::\\d{1,5})?';

/**
 * KServe's `constants.HostRegExp` as shipped since v0.14 (#3779): the exact host, then an optional port.
 * The `(?i)` suffix test in KServe never matches a real host, so every host takes this branch.
 */
export function hostRegExp(host: string): string {
  return `^${quoteMeta(host)}${portMatch}$`;
}

/** KServe's explain route regex and its path-based form. */
export const explainPrefix = '^/v1/models/[\\w-]+:explain$';
export const pathBasedExplainSuffix = '(/v1/models/[\\w-]+:explain)$';
/** KServe's catch-all path regex for HTTPRoutes. */
export const fallbackPrefix = '^/.*$';

/** `<name>.<namespace>.svc.<clusterDomain>`, as knative's `network.GetServiceHostname`. */
export function serviceHostname(name: string, namespace: string, clusterDomain: string): string {
  return `${name}.${namespace}.svc.${clusterDomain}`;
}

const dns1123LabelPattern = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1035LabelPattern = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** Kubernetes `IsDNS1123Label`. */
export function isDns1123Label(text: string): boolean {
  return text.length <= 63 && dns1123LabelPattern.test(text);
}

/** Kubernetes `IsDNS1035Label` (what Service names must be). */
export function isDns1035Label(text: string): boolean {
  return text.length <= 63 && dns1035LabelPattern.test(text);
}

/** Kubernetes `IsDNS1123Subdomain`. */
function isDns1123Subdomain(text: string): boolean {
  return (
    text.length <= 253 &&
    text.split('.').every((label) => dns1123LabelPattern.test(label) && label.length <= 63)
  );
}

/** Kubernetes `IsFullyQualifiedDomainName`: a subdomain with at least two labels. */
function isFullyQualifiedDomainName(text: string): boolean {
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  return name.split('.').length >= 2 && isDns1123Subdomain(name);
}

/** The values a domain template can use (KServe's `DomainTemplateValues`). */
export interface TemplateValues {
  Name: string;
  Namespace: string;
  IngressDomain?: string;
  Annotations?: Readonly<Record<string, string>>;
  Labels?: Readonly<Record<string, string>>;
}

/**
 * Renders the subset of Go `text/template` KServe's templates use: `{{ .Field }}` and `{{ .Map.key }}`.
 * Unknown fields, missing map keys and any other action are errors (Go prints `<no value>` for a missing
 * key, which no host or path accepts).
 */
function renderTemplate(template: string, values: TemplateValues): string {
  let out = '';
  let rest = template;
  for (;;) {
    const open = rest.indexOf('{{');
    if (open < 0) break;
    const close = rest.indexOf('}}', open + 2);
    if (close < 0) throw new HostError(`unclosed action in template ${JSON.stringify(template)}`);
    out += rest.slice(0, open);
    out += evaluateAction(rest.slice(open + 2, close).trim(), values, template);
    rest = rest.slice(close + 2);
  }
  if (rest.includes('}}')) throw new HostError(`unexpected "}}" in template ${JSON.stringify(template)}`);
  return out + rest;
}

/** A field of the template's values by its name (undefined for a name it does not have). */
function templateField(values: TemplateValues, field: string): TemplateValues[keyof TemplateValues] {
  switch (field) {
    case 'Name':
      return values.Name;
    case 'Namespace':
      return values.Namespace;
    case 'IngressDomain':
      return values.IngressDomain;
    case 'Annotations':
      return values.Annotations;
    case 'Labels':
      return values.Labels;
    default:
      return undefined;
  }
}

function evaluateAction(action: string, values: TemplateValues, template: string): string {
  const match = /^\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_][-A-Za-z0-9_./]*))?$/.exec(action);
  if (!match)
    throw new HostError(`unsupported action {{ ${action} }} in template ${JSON.stringify(template)}`);
  const [, field = '', key] = match;
  const value = templateField(values, field);
  if (value === undefined)
    throw new HostError(
      `template ${JSON.stringify(template)} uses .${field}, which is not one of .Name, .Namespace, .IngressDomain, .Annotations, .Labels`,
    );
  if (key === undefined) {
    if (typeof value !== 'string') throw new HostError(`.${field} is a map; name a key, as in .${field}.key`);
    return value;
  }
  if (typeof value !== 'object' || value === null) throw new HostError(`.${field} is not a map`);
  const entry = value[key];
  if (entry === undefined)
    throw new HostError(
      `template ${JSON.stringify(template)} uses .${field}.${key}, which the object does not have`,
    );
  return entry;
}

/** KServe's `GenerateDomainName`: the domain template rendered, and it must be a fully qualified domain name. */
export function generateDomainName(template: string, values: TemplateValues): string {
  const host = renderTemplate(template, values);
  if (!isFullyQualifiedDomainName(host)) {
    throw new HostError(
      `domain template ${JSON.stringify(template)} gives ${JSON.stringify(host)}, which is not a valid host name`,
    );
  }
  return host;
}

/** KServe's `GenerateUrlPath`: the path template rendered; it must be a path (no scheme or host), without a trailing `/`. */
export function generateUrlPath(template: string, name: string, namespace: string): string {
  const path = renderTemplate(template, { Name: name, Namespace: namespace });
  if (!path.startsWith('/') || path.startsWith('//') || /[\s?#]/.test(path)) {
    throw new HostError(
      `path template ${JSON.stringify(template)} gives ${JSON.stringify(path)}, which is not a URL path`,
    );
  }
  return path.endsWith('/') ? path.slice(0, -1) : path;
}

/** KServe's `GetAdditionalHosts`: the service host's subdomain under each additional ingress domain. */
export function additionalHosts(
  domainList: readonly string[],
  serviceHost: string,
  additionalDomains: readonly string[],
): string[] {
  const domain = domainList.find((d) => serviceHost.endsWith(d));
  if (domain === undefined) return [];
  const subdomain = serviceHost.slice(0, serviceHost.length - domain.length);
  if (!subdomain) return [];
  const hosts: string[] = [];
  const seen = new Set<string>();
  for (const extra of additionalDomains) {
    if (seen.has(extra)) continue;
    const host = subdomain + extra;
    if (!isDns1123Subdomain(host)) continue;
    hosts.push(host);
    seen.add(extra);
  }
  return hosts;
}
