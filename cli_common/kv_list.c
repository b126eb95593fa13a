// SPDX-License-Identifier: MIT
/* "key=value,key=value" option values: splitting and the messages (see skiff/cli.h). */
#include "skiff/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int kv_fail(struct cli_kv *kv, enum cli_kv_error err, unsigned int item, const char *bad)
{
	kv->err = err;
	kv->item = item;
	kv->bad = bad;
	return -EINVAL;
}

int cli_kv_parse(char *s, struct cli_kv *kv)
{
	unsigned int item = 0, i;
	char *p = s, *comma, *eq;

	memset(kv->val, 0, sizeof(kv->val));
	kv->err = CLI_KV_OK;
	kv->item = 0;
	kv->bad = kv->first = kv->second = NULL;
	if (!*s)
		return kv_fail(kv, CLI_KV_EMPTY, 0, s);
	for (;;) {
		item++;
		comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		if (!*p)
			return kv_fail(kv, comma ? CLI_KV_EMPTY_ITEM : CLI_KV_TRAILING_COMMA, item,
				       p);
		eq = strchr(p, '=');
		if (!eq || eq == p)
			return kv_fail(kv, CLI_KV_NOT_KV, item, p);
		*eq = '\0';
		if (!eq[1])
			return kv_fail(kv, CLI_KV_NO_VALUE, item, p);
		for (i = 0; i < CLI_KV_MAX_KEYS && kv->keys[i]; i++)
			if (!strcmp(p, kv->keys[i]))
				break;
		if (i == CLI_KV_MAX_KEYS || !kv->keys[i])
			return kv_fail(kv, CLI_KV_UNKNOWN_KEY, item, p);
		if (kv->val[i]) {
			kv->first = kv->val[i];
			kv->second = eq + 1;
			return kv_fail(kv, CLI_KV_REPEATED_KEY, item, p);
		}
		kv->val[i] = eq + 1;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

void cli_kv_report(const char *tool, const char *opt, const char *list, const struct cli_kv *kv,
		   const char *form)
{
	unsigned int i;

	switch (kv->err) {
	case CLI_KV_OK:
		break;
	case CLI_KV_EMPTY:
		fprintf(stderr, "%s: %s is empty; give %s\n", tool, opt, form);
		break;
	case CLI_KV_EMPTY_ITEM:
		fprintf(stderr,
			"%s: %s '%s': item %u is empty (%s); separate key=value items by single "
			"commas: %s\n",
			tool, opt, list, kv->item,
			kv->item == 1 ? "a leading comma" : "two commas in a row", form);
		break;
	case CLI_KV_TRAILING_COMMA:
		fprintf(stderr,
			"%s: %s '%s' ends with a comma; remove it (key=value items separated by "
			"single commas: %s)\n",
			tool, opt, list, form);
		break;
	case CLI_KV_NOT_KV:
		fprintf(stderr, "%s: %s item '%s' is not key=value; give %s\n", tool, opt, kv->bad,
			form);
		break;
	case CLI_KV_NO_VALUE:
		fprintf(stderr, "%s: %s key '%s' has no value; give %s\n", tool, opt, kv->bad,
			form);
		break;
	case CLI_KV_UNKNOWN_KEY:
		fprintf(stderr, "%s: %s: unknown key '%s'; the keys are", tool, opt, kv->bad);
		for (i = 0; i < CLI_KV_MAX_KEYS && kv->keys[i]; i++)
			fprintf(stderr, "%s %s", i ? "," : "", kv->keys[i]);
		fprintf(stderr, " (%s)\n", form);
		break;
	case CLI_KV_REPEATED_KEY:
		fprintf(stderr,
			"%s: %s: key '%s' given twice ('%s', then '%s'); give each key once\n",
			tool, opt, kv->bad, kv->first, kv->second);
		break;
	}
}
