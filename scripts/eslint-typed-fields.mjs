// A lint rule with type information: a Kubernetes object's `spec`, `status` or `data` is read only
// through the typed accessors of src/model/specs.ts (`specOf`, `statusOf`, `dataOf`). An object read as
// `object.spec` or `object['spec']` where `object` is a KubeObject gets `unknown` from its index
// signature, and a cast of it skips the schema the snapshot checked; fields of typed objects (a typed
// spec's own `template.spec`, an InferenceService's typed `spec`) are not refused.
import { ESLintUtils } from '@typescript-eslint/utils';
import ts from 'typescript';

const fields = new Set(['spec', 'status', 'data']);

/** Does this type (or a member of its union) have the envelope of a Kubernetes object? */
function isObjectEnvelope(type) {
  const parts = type.isUnion() ? type.types : [type];
  return parts.some((t) => t.getProperty('apiVersion') && t.getProperty('kind') && t.getProperty('metadata'));
}

const propertyName = (node) => {
  if (!node.computed && node.property.type === 'Identifier') return node.property.name;
  if (node.computed && node.property.type === 'Literal' && typeof node.property.value === 'string')
    return node.property.value;
  return undefined;
};

export const typedFields = ESLintUtils.RuleCreator.withoutDocs({
  meta: {
    type: 'problem',
    messages: {
      untyped:
        "a Kubernetes object's `{{field}}` read untyped: read it with specOf, statusOf or dataOf (src/model/specs.ts), whose types the snapshot's schema check guarantees",
    },
    schema: [],
  },
  defaultOptions: [],
  create(context) {
    const services = ESLintUtils.getParserServices(context);
    const checker = services.program.getTypeChecker();
    return {
      MemberExpression(node) {
        const field = propertyName(node);
        if (!field || !fields.has(field)) return;
        const objectType = services.getTypeAtLocation(node.object);
        if (!isObjectEnvelope(checker.getNonNullableType(objectType))) return;
        const type = services.getTypeAtLocation(node);
        if (!(type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any))) return;
        context.report({ node, messageId: 'untyped', data: { field } });
      },
    };
  },
});

export default { rules: { 'typed-fields': typedFields } };
