/*
 * keytool.h — the key tool modes of jetraft-server: cluster authority and server identity key
 * pairs, certificates, and password hashes for the configuration's users.
 *
 *   --keygen authority|identity PREFIX   writes PREFIX.key (the secret key, mode 0600) and
 *                                        PREFIX.pub (the public key); never overwrites
 *   --sign --authority A.key --identity ID.pub --name NAME [--cluster C] --out CERT
 *                                        the authority signs ID's public key for server NAME of
 *                                        cluster C (default "jetraft")
 *   --verify --authority A.pub --certificate CERT [--cluster C] [--name NAME]
 *                                        checks a certificate and prints whom it names
 *   --hash-password                      reads a password (one line) from standard input and
 *                                        prints its crypto_pwhash_str hash
 *
 * Keys and certificates are written in their text form (jr_link_text_encode: base64, one line),
 * which the configuration's authority, identity and certificate fields read.
 */
#ifndef SRV_KEYTOOL_H
#define SRV_KEYTOOL_H

/* Runs the tool mode argv asks for and returns the exit status; -1 if argv names no tool mode
 * (the server runs). */
int keytool_main(int argc, char **argv);

#endif
