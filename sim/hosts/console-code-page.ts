/**
 * How Windows PowerShell 5.1 decodes what a program writes to its standard input:
 * `[Console]::In` is a StreamReader over stdin in `Console.InputEncoding`, which .NET Framework
 * takes from the console's input code page (GetConsoleCP; learn.microsoft.com/dotnet/api/
 * system.console.inputencoding, learn.microsoft.com/windows/console/getconsolecp). A console
 * starts with the system's OEM code page (learn.microsoft.com/windows/console/console-code-pages),
 * which on an en-US Windows Server is 437, "OEM United States" (learn.microsoft.com/windows/win32/
 * intl/code-page-identifiers; `chcp` prints "Active code page: 437" there). So the UTF-8 bytes an
 * SSH client sends for "ä" (C3 A4) arrive as "├ñ", and a password with any non-ASCII character
 * is not the password any more. ASCII (bytes below 0x80) reads the same in every one of these.
 */

/** CP437's characters for bytes 0x80-0xFF (Unicode's IBM437 mapping, cp437_IBMPC). */
const cp437High =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';

/** The console input code pages the simulation knows. */
export type ConsoleCodePage = 437 | 1252 | 65001;

/** An en-US Windows Server's console input code page (the OEM code page). */
export const defaultConsoleCodePage: ConsoleCodePage = 437;

/** What `[Console]::In.ReadToEnd()` returns for these stdin bytes in `codePage`. */
export function decodeConsoleInput(bytes: Uint8Array, codePage: ConsoleCodePage): string {
  if (codePage === 65001) return new TextDecoder('utf-8').decode(bytes);
  if (codePage === 1252) return new TextDecoder('windows-1252').decode(bytes);
  let text = '';
  for (const byte of bytes)
    text += byte < 0x80 ? String.fromCharCode(byte) : cp437High[byte - 0x80];
  return text;
}
