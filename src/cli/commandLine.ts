import { Command, CommanderError, Help, Option } from "commander";
import { UsageError } from "../errors/base.js";
import type { Shutdown } from "../ops/shutdown.js";

/**
 * One definition per command: commander parses from it and writes its help from it, so the help
 * cannot drift from what the parser takes. Values stay strings (or booleans for switches): each
 * command checks them with its own one-line messages.
 */
export type OptionDefinition = {
  type: "string" | "boolean";
  short?: string;
  /** The value's name in the help (`--from N`); strings only. */
  value?: string;
  description: string;
};

export type OptionDefinitions = Record<string, OptionDefinition>;

/** The options every command takes (devnet refuses --db in its own words). */
export const COMMON_OPTIONS = {
  config: {
    type: "string",
    short: "c",
    value: "PATH",
    description: "config file (default: indexer.config.json)",
  },
  db: {
    type: "string",
    value: "PATH",
    description: "SQLite file (overrides database.path and FLASHINDEX_DB_PATH)",
  },
  "log-level": {
    type: "string",
    value: "LEVEL",
    description:
      "trace, debug, info, warn, error, fatal or silent (overrides logLevel and FLASHINDEX_LOG_LEVEL)",
  },
} as const satisfies OptionDefinitions;

type ValuesOf<T extends OptionDefinitions> = {
  [K in keyof T]?: T[K]["type"] extends "boolean" ? boolean : string;
};
export type CommandValues<T extends OptionDefinitions> = ValuesOf<T> &
  ValuesOf<typeof COMMON_OPTIONS>;
export type ParsedCommand<T extends OptionDefinitions> = {
  values: CommandValues<T>;
  positionals: string[];
};

export type CommandDefinition<T extends OptionDefinitions = OptionDefinitions> = {
  name: string;
  /** One line for `flashindex --help`. */
  summary: string;
  /** What follows `flashindex <name>` in the usage line; default `[options]`. */
  usage?: string;
  /** Paragraphs under the usage line. */
  description: string;
  options: T;
  /** Positional arguments the command reads itself (it checks their count and names them in its messages). */
  positionals?: boolean;
  /** Text after the options: subcommands, exit codes. */
  epilog?: string;
  // A method (not a function property), so a command with its own options is a CommandDefinition too.
  run(parsed: ParsedCommand<T>, shutdown: Shutdown): Promise<void>;
};

/** Identity with inference: `values` of `run` are typed by the options. */
export function defineCommand<const T extends OptionDefinitions>(
  definition: CommandDefinition<T>,
): CommandDefinition<T> {
  return definition;
}

/**
 * Descriptions of commands are laid out by hand (paragraphs, indented examples): commander must not
 * re-wrap them. One-line texts (an option's or a command's summary) are wrapped at 100 columns.
 */
const HELP_LAYOUT = {
  sortOptions: false,
  helpWidth: 100,
  boxWrap(this: Help, text: string, width: number): string {
    return text.includes("\n") ? text : Help.prototype.boxWrap.call(this, text, width);
  },
};

/** The commander program of every command: the source of parsing and help. */
export function buildProgram(commands: readonly CommandDefinition[]): Command {
  const program = new Command("flashindex")
    .usage("<command> [options]")
    .description("Indexes EIP-3009 stablecoin payments on Base into one SQLite file.")
    .helpOption("-h, --help", "show this help")
    .helpCommand(false)
    .configureHelp({ ...HELP_LAYOUT, subcommandTerm: (command) => command.name() })
    .addHelpText("after", "\nRun 'flashindex <command> --help' for a command's options.");
  for (const definition of commands) program.addCommand(toCommander(definition));
  return program;
}

function toCommander(definition: CommandDefinition): Command {
  const command = new Command(definition.name)
    .summary(definition.summary)
    .description(definition.description)
    .usage(definition.usage ?? "[options]")
    .helpOption("-h, --help", "show this help")
    .allowExcessArguments(definition.positionals === true)
    .configureHelp(HELP_LAYOUT);
  for (const [name, option] of Object.entries({
    ...definition.options,
    ...COMMON_OPTIONS,
  }) as Array<[string, OptionDefinition]>) {
    const short = option.short === undefined ? "" : `-${option.short}, `;
    const value = option.type === "string" ? ` <${option.value ?? "VALUE"}>` : "";
    command.addOption(new Option(`${short}--${name}${value}`, option.description));
  }
  if (definition.positionals === true) command.argument("[arguments...]");
  if (definition.epilog !== undefined) command.addHelpText("after", `\n${definition.epilog}`);
  return command;
}

export type Parsed =
  { kind: "help"; text: string } | ({ kind: "run" } & ParsedCommand<OptionDefinitions>);

/**
 * Parses one command's arguments strictly. Help comes back as text (exit 0); every parser error is
 * a UsageError in flashindex's words (exit 2), with any 32-byte hex run hidden: a key pasted as an
 * argument must not come back in the message.
 */
export function parseCommand(program: Command, name: string, args: readonly string[]): Parsed {
  const command = program.commands.find((c) => c.name() === name);
  if (command === undefined)
    throw new UsageError(`unknown command '${name}'\n\n${program.helpInformation()}`);
  if (args.includes("--help") || args.includes("-h")) {
    const end = args.indexOf("--");
    const before = end === -1 ? args : args.slice(0, end);
    if (before.includes("--help") || before.includes("-h"))
      return { kind: "help", text: command.helpInformation() };
  }
  let output = "";
  command.exitOverride().configureOutput({
    writeOut: (text) => (output += text),
    writeErr: (text) => (output += text),
    outputError: () => undefined,
  });
  try {
    command.parse(args as string[], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError)
      throw new UsageError(
        hideKeys(
          `${name}: ${describeCommanderError(error, command.args)} (see flashindex ${name} --help)`,
        ),
      );
    throw error;
  }
  const values = Object.fromEntries(
    command.options.map((o) => [
      o.long!.slice(2),
      command.getOptionValue(o.attributeName()) as unknown,
    ]),
  );
  // Commander built these from the definition: strings for valued options, true for switches.
  return {
    kind: "run",
    values: values as ParsedCommand<OptionDefinitions>["values"],
    positionals: [...command.args],
  };
}

/** Commander's messages in flashindex's words: the flag as typed, no "error:" prefix, no quotes of its own. */
function describeCommanderError(error: CommanderError, operands: readonly string[]): string {
  const message = error.message.replace(/^error: /, "");
  const quoted = /'([^']+)'/.exec(message)?.[1] ?? "";
  switch (error.code) {
    case "commander.unknownOption": {
      if (quoted.includes("=")) return `${quoted.split("=")[0]} takes no value`;
      const suggestion = /\(Did you mean ([^?]+)\?\)/.exec(message)?.[1];
      return `unknown option ${quoted}${suggestion === undefined ? "" : ` (did you mean ${suggestion}?)`}`;
    }
    case "commander.optionMissingArgument":
      return `${quoted.split(/[ ,]/).find((part) => part.startsWith("--")) ?? quoted}: missing value`;
    case "commander.excessArguments": {
      return `unexpected argument ${JSON.stringify(operands[0] ?? "")}`;
    }
    default:
      return message.split("\n")[0]!;
  }
}

function hideKeys(text: string): string {
  return text.replace(/(?:0x)?[0-9a-fA-F]{64}/g, "<hidden>");
}
