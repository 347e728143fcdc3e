/* choices.h - the values of an ENUM option, declared once as a list
 * C(OPT, NAME, "text") (options.def; log.h for PINCACHE_LOG's levels).  One
 * list gives the constants PC_<OPT>_<NAME>, numbered from 0 in its order,
 * and the "a|b|c" text the parser, PINCACHE_HELP and pincache(7) read. */
#ifndef PC_CHOICES_H
#define PC_CHOICES_H

#define PC_CHOICE_ENUM(opt, name, text) PC_##opt##_##name,
#define PC_CHOICE_NAME(opt, name, text) text,
#define PC_CHOICE_BAR(opt, name, text) "|" text
/* The list's "a|b|c": "|a|b|c" past its first character. */
#define PC_CHOICES_TEXT(list) (&(list(PC_CHOICE_BAR))[1])

/* An OPT row's VALID as text: an ENUM's list joined, the others as written
 * (a range "LO..HI", or NULL). */
#define PC_OPT_VALID(type, valid) PC_OPT_VALID_##type(valid)
#define PC_OPT_VALID_ENUM(list) PC_CHOICES_TEXT(list)
#define PC_OPT_VALID_BOOL(v) v
#define PC_OPT_VALID_SIZE(v) v
#define PC_OPT_VALID_INT(v) v
#define PC_OPT_VALID_STR(v) v
#define PC_OPT_VALID_PATH(v) v

#endif
