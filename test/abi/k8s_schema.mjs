// Validate Kubernetes objects (JSON files, one object each) against Kubernetes' API schemas:
// the built-in kinds with kubernetes-models' validators (generated from Kubernetes' OpenAPI
// spec), Multus' NetworkAttachmentDefinition with the schema below (its CRD's: spec.config
// a string) and that string with the CNI spec's network configuration list (cniVersion,
// name, plugins each with a type). Prints "ok FILE KIND NAME" or "invalid FILE ...: why";
// exit 1 when any is invalid, 2 when a kind has no schema here.
// Usage: node k8s_schema.mjs NODE_MODULES FILE...
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [nm, ...files] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(nm, p)).href);
const Ajv = (await load('ajv/dist/ajv.js')).default;
const ajv = new Ajv({ allErrors: true, strict: true });

const dns1123 = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
const nad = ajv.compile({
	type: 'object',
	required: ['apiVersion', 'kind', 'metadata', 'spec'],
	additionalProperties: false,
	properties: {
		apiVersion: { const: 'k8s.cni.cncf.io/v1' },
		kind: { const: 'NetworkAttachmentDefinition' },
		metadata: {
			type: 'object',
			required: ['name'],
			properties: {
				name: { type: 'string', maxLength: 253, pattern: dns1123 },
				namespace: { type: 'string' },
				labels: { type: 'object', additionalProperties: { type: 'string' } },
				annotations: { type: 'object', additionalProperties: { type: 'string' } },
			},
		},
		spec: {
			type: 'object',
			required: ['config'],
			additionalProperties: false,
			properties: { config: { type: 'string' } },
		},
	},
});
const cniList = ajv.compile({
	type: 'object',
	required: ['cniVersion', 'name', 'plugins'],
	properties: {
		cniVersion: { type: 'string', pattern: '^[0-9]+\\.[0-9]+\\.[0-9]+$' },
		name: { type: 'string', minLength: 1 },
		disableCheck: { type: 'boolean' },
		plugins: {
			type: 'array',
			minItems: 1,
			items: { type: 'object', required: ['type'], properties: { type: { type: 'string', minLength: 1 } } },
		},
	},
});
const why = (v) => ajv.errorsText(v.errors, { dataVar: '' });

let bad = 0;
for (const f of files) {
	const obj = JSON.parse(fs.readFileSync(f, 'utf8'));
	const name = `${obj.kind} ${obj.metadata?.name}`;
	let err = null;
	if (obj.kind === 'NetworkAttachmentDefinition') {
		if (!nad(obj)) {
			err = why(nad);
		} else {
			let conf;
			try {
				conf = JSON.parse(obj.spec.config);
			} catch (e) {
				err = `spec.config is not JSON: ${e.message}`;
			}
			if (conf && !cniList(conf))
				err = `spec.config: ${why(cniList)}`;
			else if (conf && conf.name !== obj.metadata.name)
				err = `spec.config's name ${conf.name} is not the NAD's ${obj.metadata.name}`;
		}
	} else {
		let Model;
		try {
			Model = (await load(`kubernetes-models/${obj.apiVersion}/${obj.kind}.js`))[obj.kind];
		} catch (e) {
			console.log(`no schema for ${obj.apiVersion} ${obj.kind} (${f})`);
			process.exit(2);
		}
		try {
			new Model(obj).validate();
		} catch (e) {
			err = e.message;
		}
	}
	if (err) {
		console.log(`invalid ${f} ${name}: ${err}`);
		bad++;
	} else {
		console.log(`ok ${f} ${name}`);
	}
}
process.exit(bad ? 1 : 0);
