/** The version kfmesh reports (--version, SARIF logs). */
export const version = '0.1.0';
