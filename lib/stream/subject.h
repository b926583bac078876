/*
 * subject — the stream layer's include for the subject grammar, which lives in util/subject.h
 * (one grammar for the store and the stream layers). Nothing is declared here; new code
 * includes util/subject.h directly.
 */
#ifndef JR_STREAM_SUBJECT_H
#define JR_STREAM_SUBJECT_H

#include "util/subject.h"

#endif
